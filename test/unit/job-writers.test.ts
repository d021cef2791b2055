// One owner of a job's life: no file outside server/jobs/ writes the jobs,
// leases or job_attempts tables (SQL or Drizzle). A new transition goes into
// server/jobs/ (docs/architecture.md says where each one lives).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';

const root = join(import.meta.dirname, '../..');
// The product's code; bench/ and scripts/ are harnesses that reset their own throw-away databases.
const DIRS = ['server', 'app', 'cli', 'worker', 'core', 'protocol', 'components', 'db'];
const TABLES = '(jobs|leases|job_attempts)';
const WRITES = [
  new RegExp(`\\b(insert\\s+into|update|delete\\s+from|truncate(\\s+table)?)\\s+${TABLES}\\b`, 'i'),
  /\.(insert|update|delete)\(\s*(schema\.)?(jobs|leases|jobAttempts)\s*\)/,
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === '.next' ? [] : sources(p);
    return /\.(ts|tsx|mjs|js)$/.test(e.name) ? [p] : [];
  });
}

/** Every line outside server/jobs/ that writes one of the tables. */
function writersOutsideJobs(): string[] {
  const found: string[] = [];
  for (const file of DIRS.flatMap((d) => sources(join(root, d)))) {
    const rel = relative(root, file);
    if (rel.startsWith('server/jobs/')) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (WRITES.some((w) => w.test(line))) found.push(`${rel}:${i + 1}: ${line.trim()}`);
      });
  }
  return found;
}

test('only server/jobs/ writes jobs, leases and job_attempts', () => {
  assert.deepEqual(writersOutsideJobs(), []);
});

/**
 * What code outside server/jobs/ may call there: the engine, and the reads
 * (views, lookups, the queue order as SQL) and pure helpers. Every change of a
 * job goes through JobEngine's methods. Types may be imported from anywhere.
 */
const CALLABLE_OUTSIDE: Record<string, readonly string[]> = {
  engine: ['JobEngine'],
  'job-view': ['jobView', 'attemptView'],
  find: ['findJob', 'findArray', 'arrayTaskIds'],
  // An array as answers show it, and which arrays have tasks left (reads).
  'array-view': ['arrayViews', 'activeArrayIds'],
  list: ['listJobs', 'listActive', 'parseJobFilter', 'parsePsQuery', 'withAttempts'],
  idle: ['withIdle', 'loadIdle'],
  holder: ['holderOf'],
  claim: ['targetsOf'],
  stdin: ['readStdinPiece'],
  'sql/queue-order': ['queueOrder', 'QUEUE_ORDER_COLUMNS', 'fairQueued', 'FAIR_ORDER_COLUMNS'],
  // Fair share's ranks for the queue's readers (it charges ended leases into token_use, a bookkeeping write of its own).
  'fair-share': ['FairShare', 'FAIR_SHARE_CHARGE_MS'],
  // The tokens' decayed use, for the Teams page's fair-share standing (a read).
  'sql/token-use': ['tokenUse'],
  // What the --gpus limits leave, for the queue's readers (reads only).
  quota: ['Quotas', 'withQuota'],
  // What a scheduling pass reads (the scheduler's QueueState on Postgres).
  'sql/queue-head': ['queueHead', 'anyPreemptibleRunning', 'preemptibleRunning'],
  // The heartbeat's one statement keeps the leases' idle streaks: the fragment is the engine's, the statement the heartbeat's.
  'sql/lease-idle-streaks': ['leaseIdleStreaks'],
  // When running jobs free their devices at the latest, for the queue's readers (a read: core/until.ts).
  'sql/frees-by': ['freesByOf'],
  // What waiting jobs wait on, in words, and a job's dependencies (reads only).
  'wait-texts': ['waitTexts', 'dependencyViews'],
};

/** Each value imported from server/jobs/ outside it that is not in CALLABLE_OUTSIDE. */
function callsPastTheEngine(): string[] {
  const found: string[] = [];
  for (const file of DIRS.flatMap((d) => sources(join(root, d)))) {
    const rel = relative(root, file);
    if (rel.startsWith('server/jobs/')) continue;
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/import\s+(type\s+)?\{([^}]*)\}\s+from\s+'([^']+)'/g)) {
      if (m[1]) continue;
      const target = relative(join(root, 'server/jobs'), join(dirname(file), m[3]!));
      if (target.startsWith('..')) continue;
      const names = m[2]!
        .split(',')
        .map((n) => n.trim())
        .filter((n) => n && !n.startsWith('type '))
        .map((n) => n.split(/\s+as\s+/)[0]!);
      for (const name of names) if (!CALLABLE_OUTSIDE[target]?.includes(name)) found.push(`${rel}: ${name} from server/jobs/${target}`);
    }
  }
  return found;
}

test('outside server/jobs/, only the engine and the reads are called there', () => {
  assert.deepEqual(callsPastTheEngine(), []);
});

test('the check finds a write where there is one', () => {
  assert.ok(WRITES[0]!.test('      update jobs set state = 1'));
  assert.ok(WRITES[0]!.test('insert into leases (device_id) values (1)'));
  assert.ok(WRITES[0]!.test('delete from job_attempts where job_id = 1'));
  assert.ok(WRITES[1]!.test('db.update(jobs).set({})'));
  assert.ok(!WRITES[0]!.test('select 1 from jobs where state = 1'));
  assert.ok(!WRITES[0]!.test('update hosts set x = 1'));
});
