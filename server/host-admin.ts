// Taking a host out of service and back: `off` (no new jobs; the running ones
// finish), `on`, and `rm` (its credentials revoked, so its worker stops for
// good; the host is kept for the record). Each is audited. The scheduler's
// claim statements re-check off and removed (server/jobs/claim.ts), so a
// controller whose fleet in memory has not heard yet still starts nothing there.
import { RcError } from '../core/errors';
import { isNotNull } from 'drizzle-orm';
import { audit as auditT, type hosts, hosts as hostsT } from '../db/schema';
import { createToken } from './auth';
import type { HostRow } from '../protocol/wire';
import type postgres from 'postgres';
import type { Db, Sql } from './db';

/** A statement runner: the pool, or a transaction of it. */
type Runner = Sql | postgres.TransactionSql<{ int8: number }>;
import { hostRow } from './fleet';
import { auditOrigin, auditTokenId } from './request-scope';

type HostColumns = typeof hosts.$inferSelect;

/** A registered, not removed host, locked for the change; not_found otherwise. */
async function lockHost(tx: Runner, name: string): Promise<HostColumns> {
  const [h] = await tx<HostColumns[]>`select * from hosts where name = ${name} for update`;
  if (!h || h.removedAt) throw new RcError('not_found', `no host is named ${name}${h ? ' (it was removed)' : ''}; rc devices lists the hosts`);
  return h;
}

function audit(tx: Runner, actor: string, action: string, target: string, detail: Record<string, unknown>) {
  return tx`insert into audit (actor, action, target, detail, origin, token_id)
    values (${actor}, ${action}, ${target}, ${JSON.stringify(detail)}::text::jsonb, ${auditOrigin()}, ${auditTokenId()})`;
}

/** rc admin host off: no new jobs start there until `on`. Turning off a host already off changes nothing (`already`). */
export async function turnHostOff(sql: Sql, name: string, reason: string | null, actor: string): Promise<{ host: HostRow; already: boolean }> {
  return sql.begin(async (tx) => {
    const h = await lockHost(tx, name);
    if (h.offSince) return { host: hostRow(h), already: true };
    const [row] = await tx<HostColumns[]>`
      update hosts set off_since = now(), off_by = ${actor}, off_reason = ${reason || null} where name = ${name} returning *`;
    const [count] = await tx<{ n: number }[]>`select count(*)::int as n from jobs where host_name = ${name} and state = 'running'`;
    await audit(tx, actor, 'host.off', name, { reason: reason || null, running: count!.n });
    return { host: hostRow(row!), already: false };
  });
}

/** rc admin host on: it takes jobs again. */
export async function turnHostOn(sql: Sql, name: string, actor: string): Promise<{ host: HostRow; already: boolean }> {
  return sql.begin(async (tx) => {
    const h = await lockHost(tx, name);
    if (!h.offSince) return { host: hostRow(h), already: true };
    const [row] = await tx<HostColumns[]>`update hosts set off_since = null, off_by = null, off_reason = null where name = ${name} returning *`;
    await audit(tx, actor, 'host.on', name, { offSince: h.offSince.toISOString(), offBy: h.offBy });
    return { host: hostRow(row!), already: false };
  });
}

/**
 * rc admin host rm: refused (host_busy) while any job runs there (a hold
 * counts); otherwise every credential of the host is revoked and the host is
 * marked removed. The caller cuts the revoked tokens' connections.
 */
export async function removeHost(sql: Sql, name: string, actor: string): Promise<{ host: HostRow; tokenIds: number[] }> {
  return sql.begin(async (tx) => {
    await lockHost(tx, name);
    const running = await tx<{ id: string; kind: string }[]>`select id, kind from jobs where host_name = ${name} and state = 'running' order by seq limit 6`;
    if (running.length) {
      const listed = running.slice(0, 5).map((j) => `${j.id}${j.kind === 'hold' ? ' (a hold)' : ''}`);
      throw new RcError(
        'host_busy',
        `host ${name} still runs ${running.length > 5 ? 'more than 5 jobs' : running.length === 1 ? 'a job' : `${running.length} jobs`}: ${listed.join(', ')}${running.length > 5 ? ', …' : ''}; turn it off so no new job starts (rc admin host off ${name}) and remove it once they have ended, or end them first (rc kill <id>)`,
      );
    }
    const [row] = await tx<HostColumns[]>`update hosts set removed_at = now(), removed_by = ${actor} where name = ${name} returning *`;
    const revoked = await tx<{ id: number }[]>`
      update tokens set revoked_at = now() where kind = 'host' and host_name = ${name} and revoked_at is null returning id`;
    await audit(tx, actor, 'host.remove', name, { revokedTokens: revoked.map((t) => t.id) });
    return { host: hostRow(row!), tokenIds: revoked.map((t) => t.id) };
  });
}

/** The host whose (revoked) credential this is, when that host was removed: its worker is told to stop for good. */
export async function removedHostOf(sql: Sql, hash: string): Promise<{ name: string; by: string; at: Date } | null> {
  const [row] = await sql<{ name: string; by: string | null; at: Date }[]>`
    select h.name, h.removed_by as by, h.removed_at as at from tokens t join hosts h on h.name = t.host_name
    where t.hash = ${hash} and t.kind = 'host' and h.removed_at is not null`;
  return row ? { name: row.name, by: row.by ?? 'an admin', at: row.at } : null;
}

/** What a removed host's worker is told, and logs, when it tries to connect: it stops for good (docs/operators.md, "Removing a host"). */
export function removedMessage(gone: { name: string; by: string; at: Date }): string {
  return `host_removed: host ${gone.name} was removed from rc by ${gone.by} at ${gone.at.toISOString()}, and its credential revoked; this worker stops for good. To uninstall it: systemctl disable --now rc-worker, then delete its unit file, its checkout and its state directory (docs/operators.md, "Removing a host"). To bring the host back: rc admin host add ${gone.name}, and run the worker with the new credential`;
}

/**
 * Registers a host (or a removed one again, which starts afresh: on, listed,
 * scheduled once its worker connects with the new credential), audited, and
 * returns its worker's credential: shown once, only its hash is kept.
 */
export function registerHost(db: Db, name: string, actor: string): Promise<string> {
  return db.transaction(async (tx) => {
    await tx
      .insert(hostsT)
      .values({ name })
      .onConflictDoUpdate({
        target: hostsT.name,
        set: { removedAt: null, removedBy: null, offSince: null, offBy: null, offReason: null },
        setWhere: isNotNull(hostsT.removedAt),
      });
    await tx.insert(auditT).values({ actor, action: 'host.register', target: name, origin: auditOrigin(), tokenId: auditTokenId() });
    return createToken(tx, 'host', `worker on ${name}`, name);
  });
}

/** A host's status, or null when no host is named so. */
export async function hostStatus(sql: Sql, name: string): Promise<string | null> {
  const [h] = await sql<{ status: string }[]>`select status from hosts where name = ${name}`;
  return h?.status ?? null;
}
