// A machine's life as the controller owns it (issue 34): recorded, with the
// instance name and the host it will join as, before the provider is asked;
// launched; found again (reconcile) until its worker has joined; terminated,
// with why. Every launch and termination is in the audit log. Placement (which
// job wants which offer) calls launchMachine; it decides nothing itself.
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { audit as auditT, hosts as hostsT, machines as machinesT } from '../../db/schema';
import type { Offer, Provider } from '../providers/provider';
import { createToken } from '../auth';
import type { Db, Sql } from '../db';
import { auditOrigin, auditTokenId } from '../request-scope';

export interface MachineDeps {
  db: Db;
  sql: Sql;
  /** The configured provider accounts, by account. */
  providers: ReadonlyMap<string, Provider>;
  /** The controller's URL as an instance reaches it (its worker joins there). */
  controllerUrl: string;
  /** A provisioning machine older than this whose launch never answered was launched by a controller that stopped (RC_LAUNCH_TIMEOUT_S). */
  launchTimeoutS: number;
  log: (msg: string) => void;
  /** A spot machine was taken back: the jobs running on its host end their attempt preempted (the job engine's machineGone). */
  takenBack?: (hostName: string, machineId: string) => Promise<unknown>;
  /** A machine's host changed as the scheduler sees it (it is being deleted): loaded again everywhere. */
  changed?: (hostName: string) => void;
}

export interface MachineRow {
  id: string;
  account: string;
  instanceName: string;
  hostName: string;
  state: string;
  terminatedWhy: string | null;
}

/** `m` and 10 base32 digits, as a job's id is `j` and 10. */
export function newMachineId(): string {
  const n = randomBytes(8).readBigUInt64BE(0) >> 14n;
  return `m${n.toString(32).padStart(10, '0')}`;
}

function audit(sql: Sql, actor: string, action: string, target: string, detail: Record<string, unknown>) {
  return sql`insert into audit (actor, action, target, detail, origin, token_id)
    values (${actor}, ${action}, ${target}, ${JSON.stringify(detail)}::text::jsonb, ${auditOrigin()}, ${auditTokenId()})`;
}

function providerOf(deps: MachineDeps, account: string): Provider {
  const p = deps.providers.get(account);
  if (!p) throw new Error(`no provider account ${account} is configured`);
  return p;
}

/**
 * Launches a machine from `offer`: its row (provisioning), its host and that host's
 * credential (the instance's join key) are stored and the launch audited in one
 * transaction, and only then is the provider asked. A launch the provider refuses
 * terminates the machine at once (whatever it may have created is deleted), with why.
 */
export async function launchMachine(deps: MachineDeps, offer: Offer, actor = 'controller'): Promise<MachineRow> {
  return (await launchMachineFor(deps, offer, {}, actor)) as MachineRow;
}

/** Placement's limits on a launch: the job it is for (one live machine each) and RC_MAX_MACHINES. */
export interface LaunchLimits {
  jobId?: string;
  maxMachines?: number;
}

/** Why launchMachineFor launched nothing: the job has a live machine already (another pass's), or the cap is reached. */
export type LaunchRefused = { refused: 'claimed' } | { refused: 'cap'; max: number };

/** An advisory lock's key: launches counted against RC_MAX_MACHINES are recorded one at a time. */
const MACHINE_CAP_LOCK = 0x7263_6d63; // 'rcmc'

/**
 * launchMachine for placement: the row is recorded only while fewer than
 * `maxMachines` machines are live (counted under an advisory lock, so two
 * controllers never both take the last place) and while `jobId` has no live
 * machine (machines_job_live_idx: of two passes for one job, one records it).
 */
export async function launchMachineFor(deps: MachineDeps, offer: Offer, limits: LaunchLimits, actor = 'controller'): Promise<MachineRow | LaunchRefused> {
  const provider = providerOf(deps, offer.account);
  const id = newMachineId();
  const name = `${provider.prefix}-${id}`;
  let joinKey: string | LaunchRefused;
  try {
    joinKey = await recordMachine(deps, offer, limits, actor, id, name);
  } catch (err) {
    if (isUniqueViolation(err, 'machines_job_live_idx')) return { refused: 'claimed' };
    throw err;
  }
  if (typeof joinKey !== 'string') return joinKey;
  try {
    await provider.launch({ name, offer, controllerUrl: deps.controllerUrl, joinKey });
  } catch (err) {
    deps.log(`machine ${id} (${name}): launch failed: ${(err as Error).message}`);
    return terminateMachine(deps, id, `launch failed: ${(err as Error).message}`, actor);
  }
  await deps.sql`update machines set state = 'booting', launched_at = now() where id = ${id} and state = 'provisioning'`;
  return (await machineRow(deps.sql, id))!;
}

function isUniqueViolation(err: unknown, constraint: string): boolean {
  for (let e = err as { code?: string; constraint_name?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e)
    if (e.code === '23505' && e.constraint_name === constraint) return true;
  return false;
}

/** The machine's row, its host and the host's credential (returned: the join key), and the launch's audit, in one transaction. */
function recordMachine(deps: MachineDeps, offer: Offer, limits: LaunchLimits, actor: string, id: string, name: string): Promise<string | LaunchRefused> {
  return deps.db.transaction(async (tx): Promise<string | LaunchRefused> => {
    if (limits.maxMachines !== undefined) {
      await tx.execute(sql`select pg_advisory_xact_lock(${MACHINE_CAP_LOCK})`);
      const [live] = await tx.execute<{ n: number }>(sql`select count(*)::int as n from machines where state <> 'terminated'`);
      if ((live?.n ?? 0) >= limits.maxMachines) return { refused: 'cap', max: limits.maxMachines };
    }
    await tx.insert(machinesT).values({
      id,
      account: offer.account,
      instanceName: name,
      offer: offer as unknown as Record<string, unknown>,
      pricePerHour: offer.pricePerHour,
      spot: offer.spot,
      simulated: offer.simulated,
      hostName: name,
      jobId: limits.jobId ?? null,
    });
    await tx.insert(hostsT).values({ name });
    await tx.insert(auditT).values({
      actor,
      action: 'machine.launch',
      target: id,
      detail: { account: offer.account, instance: name, offer: offer.offerId, pricePerHour: offer.pricePerHour, spot: offer.spot, simulated: offer.simulated },
      origin: auditOrigin(),
      tokenId: auditTokenId(),
    });
    return createToken(tx, 'host', `machine ${id}`, name);
  });
}

export async function machineRow(sql: Sql, id: string): Promise<MachineRow | null> {
  const [row] = await sql<MachineRow[]>`
    select id, account, instance_name as "instanceName", host_name as "hostName", state, terminated_why as "terminatedWhy" from machines where id = ${id}`;
  return row ?? null;
}

/**
 * The first step of a termination, alone: the machine is terminating (its devices go to no job any more:
 * server/inventory.ts), with why. Before its running jobs are ended, so that none starts on it again.
 */
export async function beginTermination(
  deps: Pick<MachineDeps, 'sql' | 'changed'>,
  id: string,
  why: string,
): Promise<{ account: string; instanceName: string } | undefined> {
  const [m] = await deps.sql<{ account: string; instanceName: string; hostName: string; was: string }[]>`
    update machines m set state = 'terminating', terminated_why = coalesce(m.terminated_why, ${why})
    from machines old where m.id = ${id} and old.id = m.id and m.state <> 'terminated'
    returning m.account, m.instance_name as "instanceName", m.host_name as "hostName", old.state as was`;
  if (m && m.was !== 'terminating') deps.changed?.(m.hostName);
  return m;
}

/**
 * Deletes the machine's instance and records why (`rm`, `launch failed: …`,
 * `sweeper`, `preempted`…): terminating until the provider says it is gone,
 * then terminated, its host removed and its credential revoked. A provider that
 * fails or is still deleting leaves it terminating: reconcile asks again.
 */
export async function terminateMachine(deps: MachineDeps, id: string, why: string, actor = 'controller'): Promise<MachineRow> {
  const m = await beginTermination(deps, id, why);
  if (!m) {
    const done = await machineRow(deps.sql, id);
    if (!done) throw new Error(`no machine ${id}`);
    return done;
  }
  let answer: 'gone' | 'pending';
  try {
    answer = await providerOf(deps, m.account).terminate(m.instanceName);
  } catch (err) {
    deps.log(`machine ${id} (${m.instanceName}): terminate failed, retried later: ${(err as Error).message}`);
    answer = 'pending';
  }
  if (answer === 'gone') {
    await deps.sql.begin(async (tx) => {
      const [row] = await tx<{ why: string; hostName: string }[]>`
        update machines set state = 'terminated', terminated_at = now() where id = ${id} and state = 'terminating'
        returning terminated_why as why, host_name as "hostName"`;
      if (!row) return;
      await tx`update hosts set removed_at = now(), removed_by = ${actor} where name = ${row.hostName} and removed_at is null`;
      await tx`update tokens set revoked_at = now() where kind = 'host' and host_name = ${row.hostName} and revoked_at is null`;
      await audit(tx as unknown as Sql, actor, 'machine.terminate', id, { instance: m.instanceName, why: row.why });
    });
  }
  return (await machineRow(deps.sql, id))!;
}

/**
 * One pass over the live machines: each account is asked how its instances are
 * and every machine moves on. Booting and running with its host online: idle.
 * Gone or taken back: terminated, with why. Still provisioning past the launch
 * timeout (the controller that launched it stopped before the provider answered):
 * terminated, whatever the provider made of it. Terminating: asked again.
 */
export async function reconcileMachines(deps: MachineDeps): Promise<void> {
  type Live = { id: string; account: string; instanceName: string; hostName: string; state: string; stale: boolean; hostOnline: boolean };
  const live: Live[] = await deps.sql<Live[]>`
    select m.id, m.account, m.instance_name as "instanceName", m.host_name as "hostName", m.state,
      m.created_at < now() - make_interval(secs => ${deps.launchTimeoutS}) as stale,
      coalesce(h.status = 'online', false) as "hostOnline"
    from machines m left join hosts h on h.name = m.host_name
    where m.state <> 'terminated' and m.state <> 'offline'`;
  const byAccount = new Map<string, Live[]>();
  for (const m of live) byAccount.set(m.account, [...(byAccount.get(m.account) ?? []), m]);
  for (const [account, list] of byAccount) {
    const provider = deps.providers.get(account);
    if (!provider) continue;
    for (const m of list.filter((x) => x.state === 'terminating')) await terminateMachine(deps, m.id, 'terminating');
    const asked = list.filter((x) => x.state !== 'terminating' && (x.state !== 'provisioning' || x.stale));
    if (!asked.length) continue;
    let states: Map<string, string>;
    try {
      states = new Map((await provider.describe(asked.map((x) => x.instanceName))).map((s) => [s.name, s.state]));
    } catch (err) {
      deps.log(`describing ${account}'s machines failed: ${(err as Error).message}`);
      continue;
    }
    for (const m of asked) {
      const state = states.get(m.instanceName) ?? 'gone';
      if (m.state === 'provisioning') {
        await terminateMachine(
          deps,
          m.id,
          `launch interrupted: no answer from the provider within ${deps.launchTimeoutS} s (the controller that launched it stopped); found ${state}`,
        );
      } else if (state === 'preempted') {
        // Terminating first (its devices go to nobody), then its job starts over elsewhere, then the instance goes.
        const why = 'preempted: the provider took the spot machine back';
        await beginTermination(deps, m.id, why);
        await deps.takenBack?.(m.hostName, m.id);
        await terminateMachine(deps, m.id, why);
      } else if (state === 'gone') {
        await terminateMachine(deps, m.id, 'gone: the provider no longer has it');
      } else if (m.state === 'booting' && state === 'running' && m.hostOnline) {
        await deps.sql`update machines set state = 'idle', ready_at = coalesce(ready_at, now()) where id = ${m.id} and state = 'booting'`;
      }
    }
  }
}
