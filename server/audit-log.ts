// The audit log as the dashboard reads it (GET /api/audit): newest first,
// filtered, paged back by id. `actor` and `target` match anywhere in the text
// (case-insensitive); `action` matches exactly, or every action under a prefix
// when it ends with `*` (`token.*`: token.create, token.revoke).
//
// An admin token reads every row. A client token reads only the rows it
// caused (those written with its token id) and the controller's own acts on
// the jobs it submitted (an idle hold's release): never another token's
// name, binding or origin. The filters narrow that view; none widens it.
import { parseDuration } from '../core/duration';
import { RcError } from '../core/errors';
import type { AuditEntry } from '../protocol/wire';
import type { Sql } from './db';

export interface AuditFilter {
  actor: string | null;
  action: string | null;
  /** The action's prefix, when `action` ended with `*`. */
  actionPrefix: boolean;
  target: string | null;
  before: number | null;
  /** Only entries at most this many seconds old. */
  sinceS: number | null;
  limit: number;
}

/** The longest `since` (a year): past it, leave it out. */
const MAX_SINCE_S = 366 * 86400;

const ACTION = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*(\.?\*)?$/;

const KEYS = ['actor', 'action', 'target', 'before', 'since', 'limit'];

export function parseAuditQuery(query: URLSearchParams): AuditFilter {
  // A key it does not take (`token=`, `submitter=`) is refused rather than ignored: a caller must not think it filtered.
  for (const key of query.keys())
    if (!KEYS.includes(key))
      throw new RcError('bad_request', `${key.slice(0, 50)}: not a filter of the audit log; it takes ${KEYS.slice(0, -1).join(', ')} and ${KEYS.at(-1)}`);
  const text = (key: string) => {
    const v = query.get(key);
    if (v === null || v === '') return null;
    if (v.length > 200) throw new RcError('bad_request', `${key}: at most 200 characters`);
    return v;
  };
  const actionText = text('action');
  if (actionText !== null && !ACTION.test(actionText))
    throw new RcError('bad_request', `action: ${JSON.stringify(actionText)} is not an action; give one like job.kill, or a prefix like token.*`);
  const beforeText = query.get('before');
  if (beforeText !== null && !/^[1-9][0-9]{0,15}$/.test(beforeText))
    throw new RcError('bad_request', `before: an entry's id (a whole number), not ${JSON.stringify(beforeText.slice(0, 50))}`);
  const limitText = query.get('limit') ?? '100';
  const limit = Number(limitText);
  if (!/^\d{1,4}$/.test(limitText) || limit < 1 || limit > 500)
    throw new RcError('bad_request', `limit must be a whole number from 1 to 500, not ${JSON.stringify(limitText.slice(0, 50))}`);
  const sinceText = query.get('since');
  const sinceS = sinceText === null || sinceText === '' ? null : parseDuration(sinceText);
  if (sinceText && (sinceS === null || sinceS < 1 || sinceS > MAX_SINCE_S))
    throw new RcError('bad_request', `since: a duration from 1s to 366d such as 30m, 12h or 7d, not ${JSON.stringify(sinceText.slice(0, 50))}`);
  const prefix = actionText?.endsWith('*') ?? false;
  return {
    actor: text('actor'),
    action: prefix ? actionText!.slice(0, -1) : actionText,
    actionPrefix: prefix,
    target: text('target'),
    before: beforeText === null ? null : Number(beforeText),
    sinceS,
    limit,
  };
}

/** `x` as a LIKE pattern that matches it anywhere, its own % and _ taken literally. */
function anywhere(x: string): string {
  return `%${x.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

type AuditRow = {
  id: number;
  at: Date;
  actor: string;
  action: string;
  target: string | null;
  detail: Record<string, unknown> | null;
  origin: string | null;
  tokenId: string | null;
};

/** Whose rows a caller reads: every row (an admin token), or a client token's own. */
export type AuditReader = { kind: 'admin' } | { kind: 'client'; tokenId: number };

/** Newest first, walked back along the primary key. */
export async function listAudit(sql: Sql, f: AuditFilter, reader: AuditReader): Promise<AuditEntry[]> {
  const conditions = [
    reader.kind === 'admin'
      ? null
      : sql`(token_id = ${reader.tokenId} or (token_id is null and exists (select 1 from jobs j where j.id = audit.target and j.token_id = ${reader.tokenId})))`,
    f.actor === null ? null : sql`actor ilike ${anywhere(f.actor)}`,
    f.target === null ? null : sql`target ilike ${anywhere(f.target)}`,
    f.action === null ? null : f.actionPrefix ? sql`starts_with(action, ${f.action})` : sql`action = ${f.action}`,
    f.before === null ? null : sql`id < ${f.before}`,
    f.sinceS === null ? null : sql`at >= now() - make_interval(secs => ${f.sinceS})`,
  ].filter((c) => c !== null);
  const where = conditions.reduce((acc, c) => sql`${acc} and ${c}`, sql`true`);
  const rows = await sql<AuditRow[]>`
    select id, at, actor, action, target, detail, origin, token_id from audit where ${where} order by id desc limit ${f.limit}`;
  return rows.map((r) => ({
    id: r.id,
    at: r.at.toISOString(),
    actor: r.actor,
    action: r.action,
    target: r.target,
    detail: r.detail,
    origin: r.origin,
    tokenId: r.tokenId === null ? null : Number(r.tokenId),
  }));
}
