// Who is calling. Every API route and socket connection goes through here.
import { and, eq, isNull } from 'drizzle-orm';
import { tokens } from '../db/schema';
import { RcError } from '../core/errors';
import type { DbOrTx } from './db';
import { hashSecret, newSecret, type TokenKind } from './tokens';

export interface Identity {
  tokenId: number;
  kind: TokenKind;
  name: string;
  hostName: string | null;
}

// A short cache keeps auth off the hot path; a revoked token stops working within this long.
const CACHE_MS = 2000;
const cache = new Map<string, { identity: Identity; at: number }>();

export async function identify(db: DbOrTx, secret: string | null | undefined): Promise<Identity | null> {
  if (!secret || secret.length > 200) return null;
  const hash = hashSecret(secret);
  const hit = cache.get(hash);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.identity;
  const [row] = await db.select().from(tokens).where(and(eq(tokens.hash, hash), isNull(tokens.revokedAt))).limit(1);
  if (!row) { cache.delete(hash); return null; }
  const identity: Identity = { tokenId: row.id, kind: row.kind, name: row.name, hostName: row.hostName };
  if (cache.size > 10_000) cache.clear();
  cache.set(hash, { identity, at: Date.now() });
  return identity;
}

/** Client routes take a client or an admin token; admin routes only an admin token. */
export function requireKind(identity: Identity | null, need: 'client' | 'admin' | 'host'): Identity {
  if (!identity) throw new RcError('unauthorized', 'a valid token is required: set RC_TOKEN (ask the operator for one)');
  const ok = need === 'client' ? identity.kind === 'client' || identity.kind === 'admin' : identity.kind === need;
  if (!ok) throw new RcError('forbidden', need === 'admin' ? 'this needs an admin token' : `this needs a ${need} credential`);
  return identity;
}

/** Stores the hash of a secret; returns the secret, which is never stored. */
export async function createToken(db: DbOrTx, kind: TokenKind, name: string, hostName: string | null = null, secret = newSecret(kind)): Promise<string> {
  await db.insert(tokens).values({ kind, name, hash: hashSecret(secret), hostName }).onConflictDoNothing();
  return secret;
}

export function bearer(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)$/i.exec(header);
  return m ? m[1]! : null;
}
