// One host credential, one worker. Each worker process makes an id at start
// and sends it when it connects; the host's row says which process holds it,
// on which controller, from where and since when. A second process is refused
// while the holder is heard from (connected moments ago, or online with a
// heartbeat within the host timeout), on whichever controller either is: two
// workers that displaced each other would lose the host's running jobs at each
// switch. The holder reconnecting (to this controller or another) is the same
// process and is let in; a holder that is gone (its connection closed, or
// silent past the host timeout) is replaced at once.
import type { Sql } from './db';

/** What a worker sends as its id (worker/controller-link.ts makes a UUID). */
export const WORKER_INSTANCE = /^[A-Za-z0-9-]{8,64}$/;

export interface Claim {
  host: string;
  /** The worker process's id; null: an older worker that sends none (it blocks nobody, and is blocked like any other). */
  instance: string | null;
  /** This controller (its bus id). */
  controller: string;
  /** Where the worker connects from, as this controller sees it. */
  address: string;
  /** The host timeout: a holder heard from within it is alive. */
  windowS: number;
}

export type ClaimResult = { ok: true } | { ok: false; address: string | null; since: Date | null };

/** Takes the host for this worker unless another live one holds it; the holder's address and time when it does. */
export async function claimHost(sql: Sql, c: Claim): Promise<ClaimResult> {
  const rows = await sql<{ held: boolean; address: string | null; since: Date | null }[]>`
    with cur as (
      select name, worker_address, worker_since,
        (worker_instance is not null and worker_instance is distinct from ${c.instance}::text and (
          worker_since > now() - make_interval(secs => ${c.windowS})
          or (status = 'online' and last_seen_at > now() - make_interval(secs => ${c.windowS})))) as held
      from hosts where name = ${c.host} for update
    ), taken as (
      update hosts set worker_instance = ${c.instance}::text, worker_controller = ${c.controller}, worker_address = ${c.address},
        worker_since = case when hosts.worker_instance = ${c.instance}::text then hosts.worker_since else now() end
      from cur where hosts.name = cur.name and not cur.held
      returning hosts.name
    )
    select held, worker_address as address, worker_since as since from cur`;
  const row = rows[0];
  if (!row?.held) return { ok: true };
  return { ok: false, address: row.address, since: row.since };
}

/**
 * The worker's connection here closed: its host is away (not offline: running jobs keep running until
 * the host timeout) and free for the next worker. Nothing changes when the host is held by another
 * process or through another controller since (the worker moved there, or was replaced).
 */
export async function releaseHost(sql: Sql, host: string, instance: string | null, controller: string): Promise<void> {
  await sql`
    update hosts set status = case when status = 'online' then 'away' else status end, worker_instance = null, worker_controller = null
    where name = ${host} and worker_controller = ${controller} and worker_instance is not distinct from ${instance}::text`;
}

/** The refusal a second worker gets, with a stable code and what to do. */
export function hostConnected(host: string, refused: Extract<ClaimResult, { ok: false }>, windowS: number): Error & { data: unknown } {
  const since = refused.since ? refused.since.toISOString().replace(/\.\d{3}Z$/, 'Z') : 'a moment ago';
  const err = new Error(
    `host_connected: host ${host} is already connected from ${refused.address ?? 'an unknown address'} since ${since}; stop that worker first, or wait ${windowS} s after it stops`,
  ) as Error & { data: unknown };
  err.data = { code: 'host_connected', retryAfterS: windowS };
  return err;
}
