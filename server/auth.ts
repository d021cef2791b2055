// Who is calling. Every API route and socket connection goes through here.
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import { audit, teams, tokens } from '../db/schema';
import { RcError } from '../core/errors';
import type { TokenKind, TokenView } from '../protocol/wire';
import type { DbOrTx } from './db';
import { hashSecret, newSecret } from './tokens';
import { auditOrigin, auditTokenId } from './request-scope';
import type { AuthLimit } from './auth-limit';

export interface Identity {
  tokenId: number;
  kind: TokenKind;
  name: string;
  hostName: string | null;
  /** The token's binding (tokens.submitter): the name, or the prefix ending in /, it may act as; null: any name. */
  submitter: string | null;
}

// A short cache keeps auth off the hot path; a revoked token stops working within this long.
const CACHE_MS = 2000;
const cache = new Map<string, { identity: Identity; at: number }>();

export async function identify(db: DbOrTx, secret: string | null | undefined): Promise<Identity | null> {
  if (!secret || secret.length > 200) return null;
  const hash = hashSecret(secret);
  const hit = cache.get(hash);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.identity;
  const [row] = await db
    .select()
    .from(tokens)
    .where(and(eq(tokens.hash, hash), isNull(tokens.revokedAt)))
    .limit(1);
  if (!row) {
    cache.delete(hash);
    return null;
  }
  const identity: Identity = { tokenId: row.id, kind: row.kind, name: row.name, hostName: row.hostName, submitter: row.submitter };
  if (cache.size > 10_000) cache.clear();
  cache.set(hash, { identity, at: Date.now() });
  return identity;
}

/**
 * identify() for a client at `address`, limited (server/auth-limit.ts):
 * refused (RateLimited) while that address has presented too many secrets
 * that name no token, without a look-up, and a secret that names none
 * counts. No secret is no guess.
 */
export async function identifyFrom(
  db: DbOrTx,
  limit: AuthLimit | null,
  address: string | undefined,
  secret: string | null | undefined,
): Promise<Identity | null> {
  if (!secret) return null;
  limit?.check(address);
  const identity = await identify(db, secret);
  if (!identity) limit?.failed(address);
  return identity;
}

/** Client routes take a client or an admin token; admin routes only an admin token. */
export function requireKind(identity: Identity | null, need: 'client' | 'admin' | 'host'): Identity {
  if (!identity) throw new RcError('unauthorized', 'a valid token is required: set RC_TOKEN (ask the operator for one)');
  const ok = need === 'client' ? identity.kind === 'client' || identity.kind === 'admin' : identity.kind === need;
  if (!ok) throw new RcError('forbidden', need === 'admin' ? 'this needs an admin token' : `this needs a ${need} credential`);
  return identity;
}

/**
 * Refuses (`forbidden`) a submitter this token may not claim: the one check of every
 * request that names one (submit, terminal, kill, release, extend, rc cp). An unbound
 * token may claim any name, and the owner checks after it are cooperative. A bound one
 * only its name, or with a binding ending in /, names that start with it.
 */
export function actsAs(identity: Identity, submitter: string): void {
  const bound = identity.submitter;
  if (bound === null) return;
  const prefix = bound.endsWith('/');
  if (prefix ? submitter.startsWith(bound) : submitter === bound) return;
  throw new RcError(
    'forbidden',
    prefix
      ? `this token acts only as ${bound}…, not ${submitter}; set RC_SUBMITTER to a name under ${bound} (${bound}<anything>)`
      : `this token acts only as ${bound}, not ${submitter}; set RC_SUBMITTER=${bound}`,
  );
}

/** Who did something, for a job's reason and the audit log: the claimed submitter and the token, `alice (token 7 agent-a)`. */
export function actorText(identity: Identity, submitter: string): string {
  return `${submitter} (${identity.kind === 'admin' ? 'admin ' : ''}token ${identity.tokenId} ${identity.name})`;
}

/** The same, as an audit row's detail: the claimed submitter and the token that claimed it. */
export function actorDetail(identity: Identity, submitter: string): Record<string, unknown> {
  return { submitter, tokenId: identity.tokenId, token: identity.name, kind: identity.kind };
}

/** The submitter of a dashboard terminal (core/web-submitter.ts). */
export { webSubmitter } from '../core/web-submitter';

/** Stores the hash of a secret; returns the secret, which is never stored. */
export async function createToken(db: DbOrTx, kind: TokenKind, name: string, hostName: string | null = null, secret = newSecret(kind)): Promise<string> {
  await db
    .insert(tokens)
    .values({ kind, name, hash: hashSecret(secret), hostName })
    .onConflictDoNothing();
  return secret;
}

/** A new client or admin token (rc admin token create), audited (run it in a transaction). The secret is returned once, never stored. */
export async function issueToken(
  db: DbOrTx,
  t: { name: string; kind: 'client' | 'admin'; submitter: string | null; team?: string | null },
  actor: string,
): Promise<{ token: TokenView; secret: string }> {
  const secret = newSecret(t.kind);
  const team = t.team ?? 'default';
  if (!(await db.select({ name: teams.name }).from(teams).where(eq(teams.name, team))).length)
    throw new RcError('not_found', `no team is named ${team}; rc admin team list lists them (rc admin team create ${team} makes it)`);
  const [row] = await db
    .insert(tokens)
    .values({ kind: t.kind, name: t.name, hash: hashSecret(secret), submitter: t.submitter, team })
    .returning();
  await db.insert(audit).values({
    actor,
    action: 'token.create',
    target: t.name,
    detail: { id: row!.id, kind: t.kind, submitter: t.submitter, team },
    origin: auditOrigin(),
    tokenId: auditTokenId(),
  });
  return { token: tokenView(row!), secret };
}

/** Every token, revoked ones included, oldest first (never a secret or a hash). */
export async function listTokens(db: DbOrTx): Promise<TokenView[]> {
  return (await db.select().from(tokens).orderBy(asc(tokens.id))).map(tokenView);
}

/** Revokes a token, audited (run it in a transaction). Revoking one already revoked changes nothing. */
export async function revokeToken(db: DbOrTx, id: number, actor: string): Promise<{ token: TokenView; already: boolean }> {
  const [revoked] = await db
    .update(tokens)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(tokens.id, id), isNull(tokens.revokedAt)))
    .returning();
  const row = revoked ?? (await db.select().from(tokens).where(eq(tokens.id, id)))[0];
  if (!row) throw new RcError('not_found', `no token ${id}; rc admin tokens lists them`);
  if (revoked)
    await db
      .insert(audit)
      .values({ actor, action: 'token.revoke', target: row.name, detail: { id, kind: row.kind }, origin: auditOrigin(), tokenId: auditTokenId() });
  return { token: tokenView(row), already: !revoked };
}

/** Drops a token from the auth cache (after its revocation is committed), so it stops working now rather than within CACHE_MS. */
export function forgetToken(tokenId: number): void {
  for (const [hash, hit] of cache) if (hit.identity.tokenId === tokenId) cache.delete(hash);
}

function tokenView(r: typeof tokens.$inferSelect): TokenView {
  return {
    id: r.id,
    name: r.name,
    kind: r.kind,
    hostName: r.hostName,
    submitter: r.submitter,
    team: r.team,
    createdAt: r.createdAt.toISOString(),
    revokedAt: r.revokedAt?.toISOString() ?? null,
  };
}

export function bearer(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)$/i.exec(header);
  return m ? m[1]! : null;
}
