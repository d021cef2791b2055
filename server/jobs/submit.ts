// Accepting a job: validate what it asks for against the fleet, then queue it.
import { randomBytes } from 'node:crypto';
import { RcError } from '../../core/errors';
import { boundRuntime, type RuntimeLimits } from '../../core/runtime-limit';
import { parseSelector, formatSelector } from '../../core/selector';
import { byHostThenIndex, decide, parseDeviceName, type DeviceView, type QueuedJob } from '../../core/schedule';
import { choiceTerms, formatGpuChoice, formatGpuChoices, type GpuChoice, parseGpuChoices } from '../../core/gpu-choices';
import { familyAsModelHint, isKnownGpuName, unknownGpuNameMessage } from '../../core/gpu-names';
import type { SelectorTerm } from '../../core/selector';
import { placementOf, type SubmitJob } from '../../protocol/api';
import { actsAs, type Identity } from '../auth';
import type { Sql } from '../db';
import type { Inventory, SchedDevice } from '../inventory';
import type { DeviceRow } from '../../protocol/wire';
import { isKeyConflict, targetsOf, withLeases, type Target } from './claim';
import type { JobRow } from './job-view';
import { holderOf } from './holder';
import { submitColumns } from './submit-columns';
import { type Admitted, admit, queueWithinLimits } from './submit-limits';
import { resolveDependencies, storeDependencies, waitsFor } from './submit-deps';

const NO_LIMITS: RuntimeLimits = { defaultS: null, maxS: null };

export interface Submitted {
  job: JobRow;
  /** Jobs queued ahead of it (0 when it started at once). */
  position: number;
  /** Set when the job was claimed at submit (state running): the caller dispatches it. */
  targets: Target[] | null;
  /** The claim itself told the controller holding the worker to send it (opts.announce). */
  announced: boolean;
  /** Its idempotency key was used before by this token: this is that submit's job, nothing new was stored. */
  replayed?: boolean;
  /** What to tell the submitter once it is stored (a limit's --max-runtime ceiling applied); absent: nothing. */
  notices?: string[];
}

export function newJobId(): string {
  // 10 base32 characters: short enough to type, 50 bits so collisions are a non-issue.
  const n = randomBytes(8).readBigUInt64BE(0) >> 14n;
  return `j${n.toString(32).padStart(10, '0')}`;
}

/**
 * Validates a job against the fleet (and its submitter against the token, actsAs) and stores it. When nothing is queued and
 * a matching device is free, the same statement claims it (see startAtOnce):
 * the common case of an idle fleet skips the queue and a scheduling pass.
 * `startAtOnce: false` skips the attempt (the caller knows jobs are queued).
 */
export interface SubmitOptions {
  /** False: do not try to start at submit (the caller knows jobs are queued). */
  startAtOnce: boolean;
  /** For a claim on a device whose worker is connected to another controller: the bus payload that asks it to send the job (server/scheduler.ts), sent by the claim's own commit; null when it is connected here. */
  announce?: (jobId: string, hostName: string, targets: Target[], who: { kind: SubmitJob['kind']; submitter: string }) => string | null;
}

/** What a submit needs: the database, and the fleet as kept in memory (server/inventory.ts). */
export interface SubmitDeps {
  sql: Sql;
  inventory: Pick<Inventory, 'candidates' | 'catchUpHosts' | 'reserve' | 'settle' | 'leased' | 'changed' | 'uuids'>;
  /** The fleet's default and maximum --max-runtime; none when absent. */
  runtimeLimits?: RuntimeLimits;
}

export async function submitJob(deps: SubmitDeps, identity: Identity, body: SubmitJob, opts: SubmitOptions = { startAtOnce: true }): Promise<Submitted> {
  actsAs(identity, body.submitter);
  if (body.idempotencyKey === undefined) return store(deps, identity, body, opts);
  try {
    return await store(deps, identity, body, opts);
  } catch (err) {
    // The key's first submit stored its job (a moment ago, on another controller, or before the answer was lost):
    // that job is the answer, also where a retry would be refused now (the fleet changed since).
    if (!isKeyConflict(err) && !(err instanceof RcError)) throw err;
    const prior = await priorSubmit(deps.sql, identity, body);
    if (prior) return prior;
    throw err;
  }
}

/** The job an earlier submit with this token and idempotency key stored, if any; a key used for another command is refused. */
async function priorSubmit(sql: Sql, identity: Identity, body: SubmitJob): Promise<Submitted | null> {
  const [found] = await sql<[(JobRow & { position: number })?]>`
    select j.*, case when j.state = 'queued' then (
      select count(*)::int from jobs q where q.state = 'queued' and q.waits is null and (q.priority > j.priority or (q.priority = j.priority and q.seq <= j.seq))
    ) else 0 end as position
    from jobs j where j.token_id = ${identity.tokenId} and j.idempotency_key = ${body.idempotencyKey!}`;
  if (!found) return null;
  const { position, ...job } = found;
  if (job.kind !== body.kind || JSON.stringify(job.argv) !== JSON.stringify(body.argv))
    throw new RcError(
      'conflict',
      `idempotencyKey ${body.idempotencyKey} was already used for job ${job.id}, which ${job.kind === 'hold' ? 'is a hold' : `runs ${JSON.stringify(job.argv)}`}: make a new key for each submit`,
    );
  return { job, position, targets: null, announced: false, replayed: true };
}

/** A submit checked against the fleet and its token's limits: what store() and an array's submit (server/jobs/submit-array.ts) store. */
export interface Checked {
  /** The body with its --max-runtime as bounded by the fleet's and the limits' ceilings. */
  body: SubmitJob;
  selectorText: string;
  choices: GpuChoice[] | null;
  ways: Way[];
  limits: Admitted;
  notices: { notices?: string[] };
}

/**
 * Validates a submit against the fleet (the selector, -d, --gpu, quarantined
 * devices) and its token's and team's limits (all but --queued, checked where it
 * is queued): refused with the error that says why, else what to store.
 */
export async function checkSubmit(deps: SubmitDeps, identity: Identity, body: SubmitJob): Promise<Checked> {
  const { sql, inventory } = deps;
  const runtime = boundRuntime(body.kind, body.maxRuntimeS, deps.runtimeLimits ?? NO_LIMITS);
  if (!runtime.ok) throw new RcError('bad_request', runtime.message);
  const runtimeAsked = body.maxRuntimeS != null;
  body = { ...body, maxRuntimeS: runtime.maxRuntimeS };
  const parsed = parseSelector(body.selector);
  if (!parsed.ok) throw new RcError('bad_selector', parsed.error.message);
  const terms = parsed.terms;
  const selectorText = formatSelector(terms);
  const wanted = body.device ?? null;
  if (wanted !== null && !parseDeviceName(wanted)) {
    throw new RcError('no_matching_device', `no device is named ${wanted}; device names look like host:gpu0 (rc devices lists them)`);
  }
  const choices = body.gpu == null ? null : gpuChoicesOf(body.gpu);
  const ways = await waysOf(inventory, terms, wanted, body.gpus, choices);
  // A --cloud-only job runs on a provider machine: what the joined hosts have does not matter.
  const cloudOnly = placementOf(body) === 'cloud';
  const impossible = cloudOnly ? [] : ways.filter((w) => w.fit === 'never');
  if (impossible.length) throw new RcError('no_matching_device', refusal(impossible, terms, wanted, choices !== null));
  // Quarantined devices are never scheduled: say so now rather than queue forever.
  if (!cloudOnly && ways.every((w) => w.fit === 'quarantined')) {
    const candidates = ways.flatMap((w) => w.matching.map((m) => m.row));
    const [first] = candidates;
    throw new RcError(
      'quarantined',
      wanted !== null
        ? `${wanted} is quarantined (unhealthy: ${first!.unhealthy?.reason ?? 'no reason recorded'}); pick another device (rc devices lists them) and tell an operator, who alone can clear it`
        : `every device matching ${selectorText || 'the request'}${choices ? ` and --gpu ${formatGpuChoices(choices)}` : ''} is quarantined (${candidates.map((d) => d.name).join(', ')}); widen the selector or pick another device, and tell an operator, who alone can clear them`,
    );
  }
  // The token's and its team's limits (server/jobs/submit-limits.ts): refused here, or its --max-runtime bounded.
  const limits = await admit(sql, identity.tokenId, {
    kind: body.kind,
    priority: body.priority,
    maxRuntimeS: body.maxRuntimeS ?? null,
    runtimeAsked,
    ttlS: body.ttlS ?? null,
    gpus: Math.min(...ways.map((w) => w.gpus)),
  });
  body = { ...body, maxRuntimeS: limits.maxRuntimeS };
  const notices = limits.notice ? { notices: [limits.notice] } : {};
  return { body, selectorText, choices, ways, limits, notices };
}

/** Validates the job against the fleet and stores it: started at once where it can, else queued. */
async function store(deps: SubmitDeps, identity: Identity, asked: SubmitJob, opts: SubmitOptions): Promise<Submitted> {
  const { sql, inventory } = deps;
  const { body, selectorText, choices, ways, limits, notices } = await checkSubmit(deps, identity, asked);
  const wanted = body.device ?? null;
  // --after / --after-any: refused now when one does not exist; such a job never starts at submit (the pass starts it).
  const after = body.after?.length || body.afterAny?.length ? await resolveDependencies(sql, body) : [];
  const id = newJobId();
  // Only the free ones can start it now (a new job has waited nothing: no reservation is made for it).
  const asQueued: QueuedJob = {
    id,
    priority: body.priority,
    seq: 0,
    terms: ways[0]!.terms,
    deviceName: wanted,
    gpus: ways[0]!.gpus,
    waitedS: 0,
    ...(choices ? { choices: ways.map((w) => ({ label: w.label, terms: w.terms, gpus: w.gpus })) } : {}),
  };
  // A --cloud-only job never starts at once: no joined host is its own (a provider machine is found for it, server/machines/).
  const [plan] = !opts.startAtOnce || !limits.mayStartAtOnce || after.length || placementOf(body) === 'cloud' ? [] : decide([asQueued], freeFor(ways));
  const fields = submitColumns(sql, { ...body, gpus: plan?.devices.length ?? asQueued.gpus }, { id, identity, selectorText, choices });
  if (plan) {
    const ids = plan.devices.map((d) => d.id);
    const targets = targetsOf(plan.devices, inventory.uuids(ids));
    const announce = opts.announce?.(id, plan.devices[0]!.hostName, targets, { kind: body.kind, submitter: body.submitter }) ?? null;
    // Held back from other submits here while the claim runs: they would only collide in the lease index.
    inventory.reserve(ids);
    let started: JobRow | null = null;
    try {
      started = await startAtOnce(sql, fields, body, plan.devices, announce);
      if (started) inventory.leased(started.hostName!, started.devices ?? [], holderOf(started));
    } finally {
      inventory.settle(ids);
    }
    // Taken by another claim, or quarantined, since it was shown free here: what is here of that host is wrong.
    if (!started) inventory.changed(plan.devices[0]!.hostName);
    if (started) return { job: started, position: 0, targets, announced: announce !== null, ...notices };
  }
  // One statement inserts the job and counts the queued jobs ahead of it (within the --queued limits, if any). With
  // dependencies, in one transaction with them locked and stored: it waits (waits 'after', no place in line) unless all are met.
  const [{ position, ...job }] = await queueWithinLimits(
    sql,
    limits.scopes,
    async (tx) => {
      const waits = after.length ? await waitsFor(tx, after) : null;
      const rows = await tx<[JobRow & { position: number }]>`
        insert into jobs (${fields.columns}, waits) values (${fields.values}, ${waits})
        returning *, case when waits is null then (
          select count(*)::int from jobs where state = 'queued' and waits is null and priority >= ${body.priority}) else 0 end as position`;
      if (after.length) await storeDependencies(tx, id, after);
      return rows;
    },
    { inTransaction: after.length > 0 },
  );
  return { job, position, targets: null, announced: false, ...notices };
}

/** One way a new job may be placed (its --gpu choice, or its selector and --gpus), what it matches, and whether it could ever start. */
export interface Way {
  label: string;
  terms: readonly SelectorTerm[];
  gpus: number;
  matching: { row: DeviceRow; view: SchedDevice }[];
  /** 'never': no device matches, or no host has enough healthy ones; 'quarantined': every matching device is. */
  fit: 'ok' | 'quarantined' | 'never';
  /** The most healthy matching devices on one host. */
  most: number;
}

/** --gpu as submitted: its choices, each model checked against what rc and the fleet know. */
function gpuChoicesOf(text: string): GpuChoice[] {
  const parsed = parseGpuChoices(text);
  if (!parsed.ok) throw new RcError('bad_gpu', parsed.message);
  return parsed.choices;
}

/** The ways a job may be placed, in its order of preference, each matched against the fleet (caught up first when one matches nothing: a refusal is final). */
async function waysOf(
  inventory: SubmitDeps['inventory'],
  terms: readonly SelectorTerm[],
  wanted: string | null,
  gpus: number,
  choices: readonly GpuChoice[] | null,
): Promise<Way[]> {
  const asked = choices
    ? choices.map((c) => ({ label: formatGpuChoice(c), terms: choiceTerms(terms, c), gpus: c.count, model: c.model }))
    : [{ label: '', terms, gpus, model: null }];
  const match = () => Promise.all(asked.map((a) => inventory.candidates(a.terms, wanted)));
  let found = await match();
  if (found.some((m) => m.matching.length === 0) && (await inventory.catchUpHosts())) found = await match();
  const ways: Way[] = [];
  for (const [i, a] of asked.entries()) {
    const { matching, most } = found[i]!;
    if (a.model !== null && matching.length === 0 && !isKnownGpuName(a.model) && !(await fleetHasModel(inventory, a.model))) {
      throw new RcError('bad_gpu', unknownGpuNameMessage(a.label, a.model));
    }
    const fit = matching.length === 0 ? 'never' : most === 0 ? 'quarantined' : most >= a.gpus ? 'ok' : 'never';
    ways.push({ label: a.label, terms: a.terms, gpus: a.gpus, matching, fit, most });
  }
  return ways;
}

/** Whether any device of the fleet (with any selector) is of this family or model: one rc does not know may still be one the fleet has. */
async function fleetHasModel(inventory: SubmitDeps['inventory'], model: string): Promise<boolean> {
  return (await inventory.candidates(choiceTerms([], { model }), null)).matching.length > 0;
}

/** no_matching_device's sentence: each way that no device could ever satisfy, and why. */
function refusal(never: readonly Way[], terms: readonly SelectorTerm[], wanted: string | null, choices: boolean): string {
  const selectorText = formatSelector(terms);
  if (!choices) {
    const [w] = never;
    if (w!.matching.length === 0) {
      return wanted !== null
        ? `no device matches: ${wanted} does not exist${terms.length ? ` or does not satisfy ${selectorText}` : ''}`
        : `no device matches the selector: ${selectorText}${hintOf(terms)}`;
    }
    return `no host has ${w!.gpus} devices matching the selector: ${selectorText || '(any)'}`;
  }
  const also = terms.length ? ` matching ${selectorText}` : '';
  const why = never.map((w) => {
    const model = w.label.split(':')[0];
    if (w.matching.length === 0) return `${w.label} (no ${model} device${also})`;
    return `${w.label} (no host has ${w.gpus} ${model} devices${also}; the most on one host is ${w.most})`;
  });
  return `no device could ever satisfy --gpu ${why.join(', ')}; drop ${never.length === 1 ? 'that choice' : 'those choices'} from --gpu${terms.length ? ' or widen --select' : ''} (rc devices lists the models)`;
}

/** `gpu_model=A100` matches no A100 that reports its size: the refusal says what to write instead. */
function hintOf(terms: readonly SelectorTerm[]): string {
  const hint = familyAsModelHint(terms);
  return hint ? `; ${hint}` : '';
}

/** The free devices decide() needs to place a new job, over all its ways (firstFree of each, once each, by host then index). */
function freeFor(ways: readonly Way[]): SchedDevice[] {
  if (ways.length === 1) return firstFree(ways[0]!.matching, ways[0]!.gpus);
  const byId = new Map<number, SchedDevice>();
  for (const w of ways) for (const d of firstFree(w.matching, w.gpus)) byId.set(d.id, d);
  return [...byId.values()].sort(byHostThenIndex);
}

/**
 * The free devices decide() needs for one new job: those up to the first
 * host with `gpus` of them (the matching devices come by host then index,
 * and decide takes the first host that has enough), so an idle fleet of
 * thousands costs a step or two, not a pass over all of it.
 */
export function firstFree(matching: readonly { view: SchedDevice }[], gpus: number): SchedDevice[] {
  const out: SchedDevice[] = [];
  const perHost = new Map<string, number>();
  for (const { view } of matching) {
    if (!view.free) continue;
    out.push(view);
    const n = (perHost.get(view.hostName) ?? 0) + 1;
    if (n >= gpus) return out;
    perHost.set(view.hostName, n);
  }
  return out;
}

/**
 * Inserts the job already running, with its leases, in one statement, but
 * only if no job is queued (a queued job comes first: the scheduler decides)
 * and none of the devices was quarantined since they were loaded. The lease
 * index refuses a device another claim took meanwhile. Null when it did not
 * start: the caller queues the job instead.
 */
function startAtOnce(sql: Sql, fields: Fields, body: SubmitJob, devices: DeviceView[], announce: string | null): Promise<JobRow | null> {
  // A lease conflict (another claim took a device first) gives null too: the job is then queued like any other.
  return withLeases(
    sql,
    devices,
    (healthy) => sql`
    insert into jobs (${fields.columns}, state, started_at, host_name, devices, fence, expires_at)
    select ${fields.values},
      'running', now(), ${devices[0]!.hostName}, ${JSON.stringify(devices.map((d) => d.name))}::text::jsonb, nextval('fence_seq'),
      -- A hold's TTL counts from its start.
      case when ${body.kind}::text = 'hold' then now() + make_interval(secs => ${body.ttlS ?? 0}::int) end
    where not exists (select 1 from jobs where state = 'queued' and waits is null) and ${healthy}
    returning *`,
    announce,
  );
}

/** What was submitted, as an INSERT's column list and values (server/jobs/submit-columns.ts): both INSERTs above store exactly this. */
type Fields = ReturnType<typeof submitColumns>;
