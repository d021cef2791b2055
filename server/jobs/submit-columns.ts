// Where each field of a submit (protocol/api.ts SubmitJob) is stored: one
// entry per field, typed so that a field without an entry, or an entry naming
// a column jobs does not have, does not compile. A field that is not stored
// says so with null, and why. Both INSERTs of a submit (queued, and started at
// once) are built from this.
import { getTableColumns } from 'drizzle-orm';
import type { PendingQuery, Row } from 'postgres';
import type { GpuChoice } from '../../core/gpu-choices';
import { jobs } from '../../db/schema';
import { machineMinOf, placementOf, type SubmitJob } from '../../protocol/api';
import { SPOT_RESTARTS } from '../../core/job-options';
import type { Identity } from '../auth';
import type { Sql } from '../db';

/** What a submit knows besides its body: the job's id, who sent it, and the body's parsed forms. */
export interface SubmitContext {
  /** The job's id, or (an array's tasks, server/jobs/submit-array.ts) the expression that gives each row's. */
  id: string | PendingQuery<Row[]>;
  identity: Identity;
  selectorText: string;
  choices: GpuChoice[] | null;
}

type Column = keyof typeof jobs.$inferInsert;
type Value = (sql: Sql, b: SubmitJob, c: SubmitContext) => PendingQuery<Row[]>;
const json = (sql: Sql, v: unknown) => sql`${v == null ? null : JSON.stringify(v)}::text::jsonb`;

const FROM_BODY: { [K in keyof SubmitJob]-?: [Column, Value] | null } = {
  kind: ['kind', (sql, b) => sql`${b.kind}`],
  argv: ['argv', (sql, b) => json(sql, b.argv)],
  ttlS: ['holdTtlS', (sql, b) => sql`${b.ttlS ?? null}::int`],
  submitter: ['submitter', (sql, b) => sql`${b.submitter}`],
  // A spot machine may be taken back: a --spot job starts over on another up to 10 times unless --restarts says (seed 002).
  restarts: ['restarts', (sql, b) => sql`${b.restarts ?? (b.spot ? SPOT_RESTARTS : 0)}::int`],
  preemptible: ['preemptible', (sql, b) => sql`${b.preemptible ?? false}::boolean`],
  retryOnPreempt: ['retryOnPreempt', (sql, b) => sql`${b.retryOnPreempt ?? false}::boolean`],
  stdin: ['stdin', (sql, b) => sql`${b.stdin ?? false}::boolean`],
  // Rows of their own (job_deps), stored in the same transaction (server/jobs/submit-deps.ts).
  after: null,
  afterAny: null,
  retries: ['retries', (sql, b) => sql`${b.retries ?? 0}::int`],
  retryDelayS: ['retryDelayS', (sql, b) => sql`${b.retryDelayS ?? 0}::int`],
  // As parsed and written back: one spelling of each selector.
  selector: ['selector', (sql, _b, c) => sql`${c.selectorText}`],
  device: ['deviceName', (sql, b) => sql`${b.device ?? null}`],
  cwd: ['cwd', (sql, b) => sql`${b.cwd ?? null}`],
  gpus: ['gpus', (sql, b) => sql`${b.gpus}::int`],
  gpu: ['gpuChoices', (sql, _b, c) => json(sql, c.choices)],
  priority: ['priority', (sql, b) => sql`${b.priority}::int`],
  // --cloud never takes a joined host (seed 002): its placement is cloud.
  placement: ['placement', (sql, b) => sql`${placementOf(b)}`],
  cloud: ['cloud', (sql, b) => sql`${b.cloud ?? null}`],
  maxPrice: ['maxPricePerHour', (sql, b) => sql`${b.maxPrice ?? null}::float8`],
  spot: ['spot', (sql, b) => sql`${b.spot ?? false}::boolean`],
  cpus: ['machineMin', (sql, b) => json(sql, machineMinOf(b))],
  // With cpus, in machine_min.
  ramGiB: null,
  diskGiB: null,
  cuda: null,
  keepS: ['keepS', (sql, b) => sql`${b.keepS ?? null}::int`],
  // Whether the client follows the job or returns at once: the client's business, not the job's.
  wait: null,
  waitTimeoutS: ['waitTimeoutS', (sql, b) => sql`${b.waitTimeoutS ?? null}::int`],
  maxRuntimeS: ['maxRuntimeS', (sql, b) => sql`${b.maxRuntimeS ?? null}::int`],
  // 0 is "no idle timeout", as absent.
  idleTimeoutS: ['idleTimeoutS', (sql, b) => sql`${b.idleTimeoutS || null}::int`],
  gpuIdleTimeoutS: ['gpuIdleTimeoutS', (sql, b) => sql`${b.gpuIdleTimeoutS ?? null}::int`],
  name: ['name', (sql, b) => sql`${b.name ?? null}`],
  comment: ['comment', (sql, b) => sql`${b.comment ?? null}`],
  idempotencyKey: ['idempotencyKey', (sql, b) => sql`${b.idempotencyKey ?? null}`],
  // The values are wiped when the job ends (server/jobs/finish.ts); an empty map is none.
  env: ['env', (sql, b) => json(sql, b.env && Object.keys(b.env).length ? b.env : null)],
};

/** Not from the body: the job's identity and its token. */
const FROM_CONTEXT: [Column, Value][] = [
  ['id', (sql, _b, c) => sql`${c.id}`],
  ['tokenId', (sql, _b, c) => sql`${c.identity.tokenId}`],
];

const STORED = [...FROM_CONTEXT, ...Object.values(FROM_BODY).filter((e): e is [Column, Value] => e !== null)];
const NAMES = getTableColumns(jobs);

/** The submit as an INSERT's column list and its values, in the same order. */
export function submitColumns(sql: Sql, body: SubmitJob, c: SubmitContext) {
  return {
    columns: sql(STORED.map(([col]) => NAMES[col].name)),
    values: joined(
      sql,
      STORED.map(([, value]) => value(sql, body, c)),
    ),
  };
}

function joined(sql: Sql, parts: PendingQuery<Row[]>[]): PendingQuery<Row[]> {
  return parts.reduce((acc, p) => sql`${acc}, ${p}`);
}
