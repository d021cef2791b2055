// Secrets are generated here, shown once, and stored only as SHA-256 hashes.
import { createHash, randomBytes } from 'node:crypto';
import type { TokenKind } from '../protocol/wire';

const PREFIX: Record<TokenKind, string> = { client: 'rc_c_', admin: 'rc_a_', host: 'rc_h_' };

export function newSecret(kind: TokenKind): string {
  return PREFIX[kind] + randomBytes(24).toString('base64url');
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}
