// Who the dashboard acts as. Pure, so the page and the controller agree.

interface TokenLike {
  name: string;
  /** The token's binding: a name, a prefix ending in /, or null (any name). */
  submitter: string | null;
}

/** The submitter of a dashboard terminal or action: the bound name, `<prefix>web` under a prefix, or `web:<token name>` for an unbound token. */
export function webSubmitter(identity: TokenLike): string {
  const bound = identity.submitter;
  if (bound === null) return `web:${identity.name}`;
  return bound.endsWith('/') ? `${bound}web` : bound;
}

/**
 * Whether the dashboard offers to stop or release this submitter's job: an
 * admin's token may (audited), a client's only its own, the jobs it submits
 * as in the dashboard or, for a bound token, under its binding. The
 * controller checks again (server/auth.ts actsAs, server/jobs/kill.ts).
 */
export function mayStop(identity: TokenLike & { kind: string }, submitter: string): boolean {
  if (identity.kind === 'admin') return true;
  const bound = identity.submitter;
  if (bound?.endsWith('/')) return submitter.startsWith(bound);
  return submitter === webSubmitter(identity);
}

/** The submitter a dashboard stop names (given mayStop): an admin acts as itself, audited; a client as the job's own submitter. */
export function stopAs(identity: TokenLike & { kind: string }, submitter: string): string {
  return identity.kind === 'admin' ? webSubmitter(identity) : submitter;
}
