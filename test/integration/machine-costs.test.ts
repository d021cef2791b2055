// What the machines cost (server/machines/costs.ts) from rows set down here with
// known times and prices, on a real Postgres: a job with two attempts on two
// machines (one at a real price, one simulated), attempts cut to their
// machine's life, idle time that is no team's, a job with no token charged to
// `default`, a joined host's job not counted, the 20 dearest jobs only, and a
// running job on a live machine counted up to now.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Database } from '../../server/db';
import { machineCosts } from '../../server/machines/costs';
import { freshDatabase } from '../helpers/db';

let db: Database;
let drop: () => Promise<void>;
const T0 = Date.parse('2026-01-01T00:00:00Z');
/** Hours after T0, as a timestamp. */
const at = (hours: number) => new Date(T0 + hours * 3_600_000).toISOString();
const close = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual}, not ${expected}`);

before(async () => {
  const fresh = await freshDatabase();
  db = fresh.database;
  drop = fresh.drop;
});
after(async () => drop());

async function machine(id: string, host: string, price: number, simulated: boolean, from: number, to: number | null) {
  await db.client`insert into machines (id, account, instance_name, offer, price_per_hour, spot, simulated, state, host_name, created_at, terminated_at)
    values (${id}, 'local', ${`rc-${id}`}, '{}'::jsonb, ${price}, false, ${simulated}, ${to === null ? 'busy' : 'terminated'}, ${host},
      ${at(from)}::timestamptz, ${to === null ? null : at(to)}::timestamptz)`;
}

async function job(id: string, tokenId: number | null, host: string, from: string, to: string | null, extra: { name?: string; kind?: string } = {}) {
  await db.client`insert into jobs (id, kind, submitter, token_id, argv, name, state, host_name, attempt, started_at, ended_at)
    values (${id}, ${extra.kind ?? 'run'}, 's', ${tokenId}, '["true"]'::jsonb, ${extra.name ?? null}, ${to === null ? 'running' : 'succeeded'}, ${host},
      1, ${from}::timestamptz, ${to}::timestamptz)`;
}

test('cost per team, per job and idle: price × the time each attempt ran on the machine, exact to the cent and below', async () => {
  await db.client`insert into teams (name) values ('vision'), ('nlp')`;
  await db.client`insert into tokens (id, kind, name, hash, team) values (1, 'client', 'ada', 'h1', 'vision'), (2, 'client', 'bo', 'h2', 'nlp')`;
  // Machine A: $2/h, real, 5 h ($10). Machine B: $0.50/h, simulated, 3 h ($1.50). Machine C: $1.20/h for 30 min, no job ($0.60).
  await machine('m00000000aa', 'host-a', 2, false, 0, 5);
  await machine('m00000000bb', 'host-b', 0.5, true, 1, 4);
  await machine('m00000000cc', 'host-c', 1.2, false, 0, 0.5);
  // train (vision): its first attempt ran 1 h on A ($2, lost), its second 1 h on B ($0.50 simulated): $2.50, partly simulated.
  await job('j000000train', 1, 'host-b', at(2), at(3), { name: 'train' });
  await db.client`update jobs set attempt = 2 where id = 'j000000train'`;
  await db.client`insert into job_attempts (job_id, attempt, host_name, state, end_cause, started_at, ended_at)
    values ('j000000train', 1, 'host-a', 'lost', 'lost', ${at(0.5)}::timestamptz, ${at(1.5)}::timestamptz)`;
  // eval (nlp): 2 h on A, $4.
  await job('j0000000eval', 2, 'host-a', at(2), at(4), { name: 'eval' });
  // A job with no token (default): from 4:30 past A's end at 5:00: half an hour counts, $1.
  await job('j00000notok', null, 'host-a', at(4.5), at(6));
  // Before machine B was created (a host of that name, earlier): nothing. On a joined host: nothing. rc cp's lease: nothing.
  await job('j00000early', 1, 'host-b', at(0), at(0.75));
  await job('j00000joined', 1, 'lab-1', at(0), at(3));
  await job('j00000000cp', 1, 'host-b', at(2.25), at(2.5), { kind: 'cp' });

  const c = await machineCosts(db.client);
  assert.deepEqual(
    c.byTeam.map((t) => [t.team, t.simulated]),
    [
      ['nlp', false],
      ['vision', true],
      ['default', false],
    ],
  );
  close(c.byTeam[0]!.cost, 4, 'nlp');
  close(c.byTeam[1]!.cost, 2.5, 'vision');
  close(c.byTeam[2]!.cost, 1, 'default');
  assert.deepEqual(
    c.byJob.map((j) => [j.jobId, j.name, j.team, j.simulated]),
    [
      ['j0000000eval', 'eval', 'nlp', false],
      ['j000000train', 'train', 'vision', true],
      ['j00000notok', null, 'default', false],
    ],
  );
  close(c.byJob[0]!.cost, 4, 'eval');
  close(c.byJob[1]!.cost, 2.5, 'train');
  close(c.byJob[2]!.cost, 1, 'no token');
  // Idle: A 1.5 h of 5 ($3), B 2 h of 3 ($1 simulated), C all of it ($0.60).
  close(c.idle.cost, 4.6, 'idle');
  assert.equal(c.idle.simulated, true);
  close(c.total.cost, 12.1, 'total');
  assert.equal(c.total.simulated, true);
  close(c.byTeam.reduce((s, t) => s + t.cost, 0) + c.idle.cost, c.total.cost, "the teams' and idle are the total");
});

test('only the 20 dearest jobs are listed, dearest first; the teams still count them all', async () => {
  // Machine D: $1/h for 25 h, 25 jobs of 1 to 25 minutes, one an hour.
  await machine('m00000000dd', 'host-d', 1, false, 10, 35);
  for (let i = 1; i <= 25; i++) await job(`j0000many${String(i).padStart(2, '0')}`, 2, 'host-d', at(10 + i - 1), at(10 + i - 1 + i / 60));
  const c = await machineCosts(db.client);
  // 28 jobs cost something: the first test's three ($4, $2.50, $1), then 25 minutes' worth down to 9 minutes'.
  assert.deepEqual(
    c.byJob.map((j) => j.jobId),
    ['j0000000eval', 'j000000train', 'j00000notok', ...Array.from({ length: 17 }, (_, i) => `j0000many${String(25 - i).padStart(2, '0')}`)],
  );
  close(c.byJob[3]!.cost, 25 / 60, 'the dearest of the 25');
  close(c.byJob[19]!.cost, 9 / 60, 'the last listed');
  // nlp: eval's $4 and all 25 (325 minutes at $1/h).
  close(c.byTeam.find((t) => t.team === 'nlp')!.cost, 4 + 325 / 60, 'nlp with every job');
  close(c.total.cost, 12.1 + 25, 'total');
});

test('a running job on a live machine counts up to now, and the machine idle before it', async () => {
  const [row] = await db.client<{ now: Date }[]>`select now() as now`;
  const now = row!.now;
  const before = await machineCosts(db.client);
  await db.client`insert into machines (id, account, instance_name, offer, price_per_hour, spot, simulated, state, host_name, created_at, job_id)
    values ('m00000000ee', 'local', 'rc-m00000000ee', '{}'::jsonb, 3, false, false, 'busy', 'host-e', now() - interval '1 hour', 'j00000000run')`;
  await job('j00000000run', 1, 'host-e', new Date(now.getTime() - 1_800_000).toISOString(), null);
  const c = await machineCosts(db.client);
  const run = c.byJob.find((j) => j.jobId === 'j00000000run')!;
  // Half an hour at $3 (a little more by the time it is read), and half an hour idle before it.
  assert.ok(run.cost >= 1.5 && run.cost < 1.52, String(run.cost));
  const idle = c.idle.cost - before.idle.cost;
  assert.ok(idle > 1.49 && idle < 1.51, String(idle));
});
