// DATABASE_URL as postgres.js (and libpq) read it. Behind Patroni or
// CloudNativePG it names every server, `db1:5432,db2:5432`, with
// target_session_attrs=read-write so each connection finds the primary: a
// WHATWG URL parser refuses such a host list, so each host is checked alone.

/** The target_session_attrs values postgres.js knows (it refuses any other at connect). */
const SESSION_ATTRS = ['read-write', 'read-only', 'primary', 'standby', 'prefer-standby'];

/** Null when `url` is a Postgres URL a client can use; otherwise why not, in a sentence. */
export function databaseUrlProblem(url: string): string | null {
  const m = /^(postgres(?:ql)?):\/\/(?:([^@/?#]*)@)?([^/?#]*)(.*)$/.exec(url);
  if (!m) return 'must be a postgres:// or postgresql:// URL, e.g. postgres://rc:secret@db.internal:5432/rc';
  const [, scheme, userinfo, hosts, rest] = m;
  const list = hosts!.split(',');
  for (const host of list) {
    if (!host && list.length > 1) return `an empty host in ${hosts}: separate servers with one comma, db1:5432,db2:5432`;
    let parsed: URL;
    try {
      parsed = new URL(`${scheme}://${userinfo === undefined ? '' : `${userinfo}@`}${host}${rest}`);
    } catch {
      return `${host} is not a host or host:port (a port is a number from 1 to 65535)`;
    }
    const attrs = parsed.searchParams.get('target_session_attrs');
    if (attrs !== null && !SESSION_ATTRS.includes(attrs)) return `target_session_attrs must be one of ${SESSION_ATTRS.join(', ')}, not ${attrs}`;
  }
  return null;
}

/**
 * What to give postgres.js beside `url` so that target_session_attrs=read-write
 * finds the primary. postgres.js decides read-write by default_transaction_read_only
 * alone, which a hot standby of Postgres 14 or later reports `off` (it tells
 * in_hot_standby apart): it would take the standby, and every write there fails.
 * `primary` checks in_hot_standby; a primary that is read-only by setting is
 * still refused by the health check (server/db-health.ts).
 */
export function sessionAttrs(url: string): { target_session_attrs?: 'primary' } {
  const query = url.indexOf('?');
  if (query < 0) return {};
  return new URLSearchParams(url.slice(query + 1)).get('target_session_attrs') === 'read-write' ? { target_session_attrs: 'primary' } : {};
}
