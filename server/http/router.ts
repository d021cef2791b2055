// A small router for /api (and GET /metrics): one wrapper does auth, body parsing and error
// shaping, so each route is a few lines that call one use case. Routes are
// registered by name (`GET /api/jobs`) from the route table (protocol/routes.ts): a handler's
// answer is checked against the table's response type, and its body is parsed
// with the route's schema (protocol/bodies.ts's BODIES) before it runs.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzip } from 'node:zlib';
import type { z } from 'zod';
import { RcError, type ApiErrorBody } from '../../core/errors';
import { BODIES } from '../../protocol/bodies';
import {
  type Access,
  type AccessOf,
  GETS_WITH_EFFECTS,
  type ParamsOf,
  type ResponseOf,
  ROUTES,
  type RouteName,
  type RouteTypes,
  splitRoute,
} from '../../protocol/routes';
import { bearer, identifyFrom, requireKind, type Identity } from '../auth';
import { type AuthLimit, RateLimited } from '../auth-limit';
import { databaseDown, errorCode, outOfSpace, type Db } from '../db';
import type { DbHealth } from '../db-health';
import { crossSiteRefusal, ownOrigins, SESSION_ENDED, sessionCookie } from './session';
import { MCP_HEADER } from '../mcp/loopback';
import { zodCode, zodMessage } from '../../protocol/zod-message';
import { inRequest, originOf, type RequestScope } from '../request-scope';
import { sessionFrom } from '../sessions';
import { bodyRefused, readBounded } from '../read-bounded';
import { targetProblem } from './bad-requests';

export interface PublicContext<P = Record<string, string>> {
  req: IncomingMessage;
  res: ServerResponse;
  params: P;
  query: URLSearchParams;
}
export interface RouteContext<P = Record<string, string>> extends PublicContext<P> {
  identity: Identity;
}

/** The body a route's handler gets: parsed by its schema (BODIES), or undefined when the route takes none (or reads its own). */
type ParsedBody<N extends RouteName> = N extends keyof typeof BODIES ? z.output<(typeof BODIES)[N]> : undefined;

/** What a handler of route N is given. */
export type HandlerContext<N extends RouteName> = (AccessOf<N> extends 'public' ? PublicContext<ParamsOf<N>> : RouteContext<ParamsOf<N>>) & {
  body: ParsedBody<N>;
};

/** An answer with another status than 200, or with headers. */
export class Reply<T> {
  constructor(
    readonly body: T,
    readonly status = 200,
    readonly headers: Record<string, string> = {},
  ) {}
}

/**
 * An answer already serialized (a listing put together from JSON kept per
 * item: server/inventory.ts): sent as it is. `T` is the shape it has, for
 * the route table's check.
 */
export class JsonText<T> {
  declare readonly shape?: T;
  constructor(readonly text: string) {}
}

/** 201 Created, with the body. */
export function created<T>(body: T): Reply<T> {
  return new Reply(body, 201);
}

/**
 * What a handler gives back: the answer (sent as JSON), or a Reply. A route
 * that may answer in a form of its own (a frame stream, bytes, a redirect)
 * may instead write to `res` itself and give back nothing.
 */
export type HandlerResult<N extends RouteName> =
  | ResponseOf<N>
  | Reply<ResponseOf<N>>
  | JsonText<ResponseOf<N>>
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler that answered itself returns nothing (an async function's void), not undefined.
  | (RouteTypes[N] extends { stream: true } | { bytes: true } | { form: true } ? void : never);

export type Handler<N extends RouteName> = (ctx: HandlerContext<N>) => Promise<HandlerResult<N>>;

export interface RouterOptions {
  /** RC_PUBLIC_URL: the dashboard's address when a proxy serves it under another name. */
  publicUrl: string | null;
  /** Whether the database answers: while it does not, requests get 503 instead of hanging. */
  health?: DbHealth | null;
  /** A request wrote an audit row (the live view's `audit` change). */
  audited?: () => void;
  /** Token guesses, limited per client address (server/auth-limit.ts); none: no limit. */
  authLimit?: AuthLimit;
  /** This process's secret for an MCP tool's own request (server/mcp/loopback.ts): its audit rows say `via mcp` and the agent's address. */
  mcpNonce?: string;
}

interface Route {
  name: RouteName;
  method: string;
  path: string;
  pattern: RegExp;
  keys: string[];
  access: Access;
  schema: z.ZodType | null;
  handler: (ctx: HandlerContext<RouteName>) => Promise<unknown>;
}

const MAX_BODY = 2 * 1024 * 1024;

/** A known path asked with a method it does not take: 405, with the methods it does take. */
class MethodNotAllowed extends RcError {
  constructor(
    method: string,
    path: string,
    readonly allow: string[],
  ) {
    super('method_not_allowed', `${method} is not supported on ${path}; it takes ${allow.join(', ')}`);
  }
}

export class Router {
  private readonly routes: Route[] = [];
  /** Paths of routes outside /api (GET /metrics, where Prometheus looks): the router answers them too. */
  private readonly ownPaths = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly log: (msg: string) => void,
    private readonly opts: RouterOptions = { publicUrl: null },
  ) {}

  get publicUrl(): string | null {
    return this.opts.publicUrl;
  }

  /** Registers the handler of a route of the table (protocol/routes.ts). */
  on<N extends RouteName>(name: N, handler: Handler<N>): void {
    const { method, path } = splitRoute(name);
    const access: Access = ROUTES[name];
    const keys: string[] = [];
    const pattern = new RegExp(
      '^' +
        path.replace(/:(\w+)/g, (_, k: string) => {
          keys.push(k);
          return '([^/]+)';
        }) +
        '$',
    );
    const schema = (BODIES as Partial<Record<RouteName, z.ZodType>>)[name] ?? null;
    this.routes.push({ name, method, path, pattern, keys, access, schema, handler: handler as unknown as Route['handler'] });
    if (!isApiPath(path)) this.ownPaths.add(path);
  }

  /** Handles the request, or returns false when the path is not under /api (nor a route's path outside it). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    // A target that is not a path is nobody's: answered here for the dashboard's pages too.
    const problem = targetProblem(req.url);
    if (problem) {
      this.fail(res, new RcError('bad_request', problem));
      return true;
    }
    const url = new URL(req.url!, 'http://x');
    if (!isApiPath(url.pathname) && !this.ownPaths.has(url.pathname)) return false;
    // A late write (the client left, or a 503 went out first) must not become an unhandled 'error'.
    res.on('error', () => {});
    const health = this.opts.health ?? null;
    let stopWaiting = () => {};
    try {
      const { route, params } = this.match(req.method ?? 'GET', url.pathname);
      checkText(url.searchParams, params);
      if (health && !health.up)
        throw new RcError('database_unavailable', 'the controller cannot reach its database just now; nothing was changed: try again in a few seconds');
      // A database that stops answering mid-request would hold the client for as long as it is away.
      const stalled = new Promise<never>((_, reject) => {
        stopWaiting =
          health?.onDown(() =>
            reject(
              new RcError(
                'database_unavailable',
                'the database stopped answering while the controller handled this request; it may or may not have taken effect: check with rc ps or rc jobs once it is back',
              ),
            ),
          ) ?? (() => {});
      });
      const result = await Promise.race([this.run(route, req, res, params, url.searchParams), stalled]);
      if (result instanceof Reply) sendJson(res, result.status, result.body, result.headers);
      else if (result !== undefined) sendJson(res, 200, result);
    } catch (err) {
      this.fail(res, err);
    } finally {
      stopWaiting();
    }
    return true;
  }

  private async run(route: Route, req: IncomingMessage, res: ServerResponse, params: Record<string, string>, query: URLSearchParams): Promise<unknown> {
    const base: PublicContext = { req, res, params, query };
    if (route.access === 'public') {
      const body = route.schema ? await readBody(req, route.schema) : undefined;
      return route.handler({ ...base, body } as HandlerContext<RouteName>);
    }
    const { secret, via } = this.credential(req, route.name);
    const address = req.socket.remoteAddress;
    const identity = requireKind(
      via === 'dashboard' ? await this.sessionIdentity(address, secret) : await identifyFrom(this.db, this.opts.authLimit ?? null, address, secret),
      route.access,
    );
    const body = route.schema ? await readBody(req, route.schema) : undefined;
    // Where it came from, for the audit rows its use case writes (server/request-scope.ts).
    const scope: RequestScope = {
      origin: mcpOrigin(req, this.opts.mcpNonce) ?? originOf(req.socket.remoteAddress, via),
      tokenId: identity.tokenId,
      audited: false,
    };
    const result = await inRequest(scope, () => route.handler({ ...base, identity, body } as HandlerContext<RouteName>));
    // A refused change (a stale sheet) wrote nothing: only a request that succeeded is told.
    if (scope.audited) this.opts.audited?.();
    return result;
  }

  /**
   * The caller's secret and how it came: a bearer token, or the session
   * cookie (the dashboard). A cookie also comes with requests other pages
   * make, so one that changes anything must come from the dashboard's own
   * origin, as JSON (no page of another origin can send that without a
   * preflight, which rc never grants).
   */
  private credential(req: IncomingMessage, name: RouteName): { secret: string | null; via: 'token' | 'dashboard' } {
    const token = bearer(req.headers.authorization);
    if (token !== null) return { secret: token, via: 'token' };
    const cookie = sessionCookie(req.headers.cookie);
    if (cookie === null) return { secret: null, via: 'token' };
    if (GETS_WITH_EFFECTS.has(name))
      throw new RcError(
        'forbidden',
        `${name.split(' ')[1]} takes a lease, so it takes a bearer token (rc cp, RC_TOKEN), not the dashboard's session cookie: any page can make a browser send that with a GET`,
      );
    if (SAFE_METHODS.has(req.method ?? 'GET')) return { secret: cookie, via: 'dashboard' };
    const refusal = crossSiteRefusal(req.headers, ownOrigins(req.headers, this.opts.publicUrl));
    if (refusal)
      throw new RcError('forbidden', `${refusal}; the session cookie is only accepted from the dashboard's own pages (scripts use a bearer token: RC_TOKEN)`);
    if (!isJson(req.headers['content-type'])) {
      throw new RcError('unsupported_media_type', 'a change made with the session cookie must send its body as application/json');
    }
    return { secret: cookie, via: 'dashboard' };
  }

  /** Who the session cookie signs in as; a session that has ended is told as such, not as a missing token. */
  /** The session cookie's identity; a cookie that is no live session counts as a failed guess, as a bad token does. */
  private async sessionIdentity(address: string | undefined, cookie: string | null): Promise<Identity> {
    const session = await sessionFrom(this.db, this.opts.authLimit ?? null, address, cookie);
    if (!session) throw new RcError('unauthorized', SESSION_ENDED);
    return session.identity;
  }

  private match(method: string, path: string): { route: Route; params: Record<string, string> } {
    const allow: string[] = [];
    for (const route of this.routes) {
      const m = route.pattern.exec(path);
      if (!m) continue;
      if (route.method !== method) {
        allow.push(route.method);
        continue;
      }
      const params: Record<string, string> = {};
      route.keys.forEach((k, i) => {
        params[k] = decodePart(m[i + 1]!);
      });
      return { route, params };
    }
    if (allow.length) throw new MethodNotAllowed(method, path, allow);
    throw new RcError('not_found', `no API route ${path}; docs/api.md lists them`);
  }

  /** Name, method and path of every route registered, for docs and tests. */
  list(): { name: RouteName; method: string; path: string; access: Access }[] {
    return this.routes.map((r) => ({ name: r.name, method: r.method, path: r.path, access: r.access }));
  }

  private fail(res: ServerResponse, err: unknown): void {
    const rc = asRcError(err);
    if (!rc) this.log(`internal error: ${err instanceof Error ? err.stack : String(err)}`);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body: ApiErrorBody = rc ? rc.toBody() : { error: { code: 'internal', message: 'the controller hit an internal error; its log has the details' } };
    const headers: Record<string, string> =
      rc?.code === 'database_unavailable'
        ? { 'retry-after': '5' }
        : rc instanceof RateLimited
          ? { 'retry-after': String(rc.retryAfterS) }
          : rc instanceof MethodNotAllowed
            ? { allow: rc.allow.join(', ') }
            : {};
    // The rest of a refused body is not read: the connection ends with this answer.
    if (bodyRefused(res.req)) headers.connection = 'close';
    sendJson(res, rc ? rc.status : 500, body, headers);
  }
}

/**
 * Errors the user can act on: rc's own, Postgres refusing a value the request
 * carried (SQLSTATE class 22, a backstop behind the validation), the
 * database being away, and its disk full.
 */
function asRcError(err: unknown): RcError | null {
  if (err instanceof RcError) return err;
  const code = errorCode(err);
  if (code !== null && /^22[0-9A-Z]{3}$/.test(code)) return new RcError('bad_request', 'a value in the request is not valid here');
  if (databaseDown(err))
    return new RcError('database_unavailable', 'the controller cannot reach its database just now; nothing was changed: try again in a few seconds');
  if (outOfSpace(err))
    return new RcError(
      'database_full',
      "the controller's database is out of disk space; nothing was changed: an operator must free space where Postgres keeps its data, then try again",
    );
  return null;
}

/**
 * An MCP tool's request to this controller (server/mcp/loopback.ts): its origin is the agent's address `via mcp`.
 * Only from this machine and with this process's secret: nobody else can make an audit row say so.
 */
function mcpOrigin(req: IncomingMessage, nonce: string | undefined): string | null {
  const header = req.headers[MCP_HEADER];
  if (!nonce || typeof header !== 'string' || !isLoopback(req.socket.remoteAddress)) return null;
  const [given, address] = header.split(' ');
  return given === nonce && address ? `${originOf(address, 'token')} via mcp` : null;
}

function isLoopback(address: string | undefined): boolean {
  return address === '::1' || /^(::ffff:)?127\./.test(address ?? '');
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function isApiPath(path: string): boolean {
  return path === '/api' || path.startsWith('/api/');
}

function isJson(type: string | undefined): boolean {
  return (type ?? '').split(';')[0]!.trim().toLowerCase() === 'application/json';
}

/** A %-escaped path part; a malformed escape is the client's mistake. */
function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new RcError('bad_request', `the path has a malformed %-escape: ${part.slice(0, 100)}`);
  }
}

/** Postgres cannot store a NUL byte in text: refuse it in the request rather than fail in the database. */
function checkText(query: URLSearchParams, params: Record<string, string>): void {
  for (const [k, v] of query)
    if (k.includes('\0') || v.includes('\0'))
      throw new RcError('bad_request', `the query parameter ${JSON.stringify(k.replace(/\0/g, ''))} contains a NUL byte`);
  for (const [k, v] of Object.entries(params)) if (v.includes('\0')) throw new RcError('bad_request', `the path's ${k} contains a NUL byte`);
}

/** Answers at least this big are gzipped for a client that accepts it (the fleet of a thousand hosts is megabytes of JSON). */
export const GZIP_FROM_BYTES = 64 * 1024;

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  // Someone answered already (a 503 while the database was away), or the client left.
  if (res.headersSent || res.destroyed) return;
  const text = Buffer.from(body instanceof JsonText ? body.text : JSON.stringify(body));
  const send = (bytes: Buffer, gzipped: boolean) => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': bytes.length,
      'cache-control': 'no-store',
      ...(gzipped ? { 'content-encoding': 'gzip', vary: 'accept-encoding' } : {}),
      ...headers,
    });
    res.end(bytes);
  };
  if (text.length < GZIP_FROM_BYTES || !acceptsGzip(res.req?.headers['accept-encoding'])) return send(text, false);
  // The fastest level: most of what repeats in JSON goes at once, for little CPU.
  gzip(text, { level: 1 }, (err, zipped) => (err ? send(text, false) : send(zipped, true)));
}

/** Whether an Accept-Encoding header takes gzip (and does not refuse it with q=0). */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  return value.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== '*') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return !q || Number(q.slice(2)) > 0;
  });
}

/**
 * Reads and validates a JSON body; any problem is a `bad_request` that says
 * what is wrong. `form` also takes a urlencoded form (only the sign-in page
 * posts one).
 */
export async function readBody<S extends z.ZodType>(req: IncomingMessage, schema: S, opts: { form?: boolean; maxBytes?: number } = {}): Promise<z.infer<S>> {
  const raw = await readRaw(req, opts.maxBytes);
  let value: unknown;
  const type = req.headers['content-type'] ?? '';
  if (opts.form && type.startsWith('application/x-www-form-urlencoded')) {
    value = Object.fromEntries(new URLSearchParams(raw));
  } else {
    try {
      value = raw.length ? JSON.parse(raw) : {};
    } catch {
      throw new RcError('bad_request', 'the request body is not valid JSON');
    }
  }
  const nul = nulPath(value, []);
  if (nul) throw new RcError('bad_request', `${nul.length ? `${nul.join('.')}: ` : ''}text cannot contain a NUL byte`);
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new RcError(zodCode(parsed.error), zodMessage(parsed.error));
  return parsed.data;
}

/** Where in a parsed body a string holds a NUL byte (Postgres cannot store one), or null. */
function nulPath(value: unknown, path: (string | number)[], depth = 0): (string | number)[] | null {
  if (typeof value === 'string') return value.includes('\0') ? path : null;
  if (depth > 64 || value === null || typeof value !== 'object') return null;
  for (const [k, v] of Object.entries(value)) {
    if (k.includes('\0')) return path;
    const found = nulPath(v, [...path, Array.isArray(value) ? Number(k) : k], depth + 1);
    if (found) return found;
  }
  return null;
}

async function readRaw(req: IncomingMessage, max = MAX_BODY): Promise<string> {
  const bytes = await readBounded(req, max, () => new RcError('payload_too_large', `the request body is over ${Math.round(max / 1024 / 1024)} MiB`));
  return bytes.toString('utf8');
}
