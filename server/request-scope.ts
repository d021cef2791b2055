// The request being served, for what the use cases below the router record
// of it without every signature passing it along: where it came from (the
// audit log's `origin`), and whether it wrote an audit row (the live view's
// `audit` change). The router opens a scope per request (server/http/router.ts);
// outside one (the controller's own acts: a quarantine on evidence, a refused
// report, the reaper) there is none, and the origin is null.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface RequestScope {
  /** `<client address>, dashboard` (the session cookie) or `<client address>, token` (a bearer token). */
  origin: string;
  /** The id of the token the request came with. */
  tokenId: number;
  /** Set once a use case took the origin for an audit row. */
  audited: boolean;
}

const scopes = new AsyncLocalStorage<RequestScope>();

/** Runs fn with the request's scope. */
export function inRequest<T>(scope: RequestScope, fn: () => T): T {
  return scopes.run(scope, fn);
}

/**
 * The origin to store with an audit row written for the request being served
 * (null outside one), and a note that the request wrote one.
 */
export function auditOrigin(): string | null {
  const scope = scopes.getStore();
  if (!scope) return null;
  scope.audited = true;
  return scope.origin;
}

/** The token id to store with an audit row written for the request being served (null outside one). */
export function auditTokenId(): number | null {
  return scopes.getStore()?.tokenId ?? null;
}

/** How a request's origin reads: its client's address (IPv4 without the ::ffff: prefix) and how it signed in. */
export function originOf(address: string | undefined, via: 'dashboard' | 'token'): string {
  const a = (address ?? 'unknown').replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1');
  return `${a}, ${via}`;
}
