// The dashboard's sessions. Signing in makes one: a random secret, kept only
// as its hash, and the cookie carries the session's id and that secret, never
// the token. A request with the cookie acts as the session's token while the
// token and the session both stand: signing out revokes the session, revoking
// the token ends all of its sessions, and a session expires after a week
// unused or a month after sign-in. Every request checks the database (one
// primary-key lookup joined to its token), so an ending takes effect at once
// on every controller.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, gt, isNull, lt, sql } from 'drizzle-orm';
import { sessions, tokens } from '../db/schema';
import type { Identity } from './auth';
import type { AuthLimit } from './auth-limit';
import type { DbOrTx } from './db';

/** Unused this long, a session ends. */
export const SESSION_IDLE_S = 7 * 86400;
/** However much it is used, a session ends this long after its sign-in (the cookie's Max-Age). */
export const SESSION_MAX_S = 30 * 86400;
/** Its last use is written at most this often (a request's lookup stays a read). */
const TOUCH_EVERY_MS = 60_000;

/** `<id>.<secret>`: the id a whole number, the secret 32 random bytes in base64url. */
const COOKIE_VALUE = /^([1-9][0-9]{0,15})\.([A-Za-z0-9_-]{43})$/;

function hashOf(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** A new session for the token (a client or admin one, checked by the caller); returns the cookie's value. */
export async function startSession(db: DbOrTx, tokenId: number): Promise<string> {
  const secret = randomBytes(32).toString('base64url');
  // Sessions long over are of no use to anyone: the sign-ins, which are rare, sweep them.
  await db.delete(sessions).where(lt(sessions.expiresAt, sql`now() - interval '1 day'`));
  const [row] = await db
    .insert(sessions)
    .values({ tokenId, secretHash: hashOf(secret).toString('hex'), expiresAt: sql`now() + make_interval(secs => ${SESSION_IDLE_S})` })
    .returning({ id: sessions.id });
  return `${row!.id}.${secret}`;
}

/** Who a cookie's session acts as, with its id; null when the value is not a session's, or it or its token has ended. */
export async function resolveSession(db: DbOrTx, value: string | null): Promise<{ identity: Identity; sessionId: number } | null> {
  const m = value === null ? null : COOKIE_VALUE.exec(value);
  if (!m) return null;
  const id = Number(m[1]);
  const [row] = await db
    .select({
      secretHash: sessions.secretHash,
      lastSeenAt: sessions.lastSeenAt,
      tokenId: tokens.id,
      kind: tokens.kind,
      name: tokens.name,
      hostName: tokens.hostName,
      submitter: tokens.submitter,
    })
    .from(sessions)
    .innerJoin(tokens, eq(tokens.id, sessions.tokenId))
    .where(and(eq(sessions.id, id), isNull(sessions.revokedAt), gt(sessions.expiresAt, sql`now()`), isNull(tokens.revokedAt)))
    .limit(1);
  if (!row || row.kind === 'host') return null;
  if (!timingSafeEqual(Buffer.from(row.secretHash, 'hex'), hashOf(m[2]!))) return null;
  if (Date.now() - row.lastSeenAt.getTime() > TOUCH_EVERY_MS)
    await db
      .update(sessions)
      .set({
        lastSeenAt: sql`now()`,
        expiresAt: sql`least(${sessions.createdAt} + make_interval(secs => ${SESSION_MAX_S}), now() + make_interval(secs => ${SESSION_IDLE_S}))`,
      })
      .where(and(eq(sessions.id, id), isNull(sessions.revokedAt)));
  const { tokenId, kind, name, hostName, submitter } = row;
  return { identity: { tokenId, kind, name, hostName, submitter }, sessionId: id };
}

/**
 * resolveSession for a request or socket from `address`, counted as a token is
 * (auth.ts identifyFrom): refused (RateLimited) while the address may not try,
 * and a value that is no standing session counts as a failed guess.
 */
export async function sessionFrom(db: DbOrTx, limit: AuthLimit | null, address: string | undefined, value: string | null) {
  limit?.check(address);
  const session = await resolveSession(db, value);
  if (!session) limit?.failed(address);
  return session;
}

/** Signing out: revokes the cookie's session when it is one that stands; returns its id, or null. */
export async function endSession(db: DbOrTx, value: string | null): Promise<number | null> {
  const session = await resolveSession(db, value);
  if (!session) return null;
  await db
    .update(sessions)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(sessions.id, session.sessionId), isNull(sessions.revokedAt)));
  return session.sessionId;
}
