// Waiting jobs against a real Postgres: dependencies settled by the end's own
// follow-up statement (not the sweep) even when the dependent is submitted
// while its dependency ends; a cascade; retries as core's runsAgain says; and
// the sweep that repairs what an end's controller missed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { claimDevices } from '../../server/jobs/claim';
import { ended, outcome, runsAgain } from '../../core/job-state';
import { JobEvents } from '../../server/job-events';
import { endJob } from '../../server/jobs/finish';
import { submitJob } from '../../server/jobs/submit';
import { settleSubmitted, sweepWaits } from '../../server/jobs/waits';
import { storeEnds } from '../../server/jobs/end-store';
import { Inventory } from '../../server/inventory';
import type { Database } from '../../server/db';
import type { Identity } from '../../server/auth';
import { RcError } from '../../core/errors';
import { freshDatabase } from '../helpers/db';

let db: Database;
let drop: () => Promise<void>;
const who: Identity = { tokenId: 1, kind: 'client', name: 't', hostName: null, submitter: null };
let device = { id: 0, name: 'h:gpu0' };

before(async () => {
  const fresh = await freshDatabase();
  db = fresh.database;
  drop = fresh.drop;
  // Away: nothing starts at submit; these tests claim by hand.
  await db.client`insert into hosts (name, status) values ('h', 'away')`;
  const [d] = await db.client<{ id: number }[]>`insert into devices (host_name, index) values ('h', 0) returning id`;
  device = { id: d!.id, name: 'h:gpu0' };
});
after(async () => drop());

const base = { kind: 'run' as const, argv: ['true'], selector: '', submitter: 's', gpus: 1, priority: 0, wait: true };
const deps = () => ({ sql: db.client, events: new JobEvents() });
const submit = async (extra: Record<string, unknown> = {}) => {
  const { job } = await submitJob({ sql: db.client, inventory: new Inventory(db.client) }, who, { ...base, ...extra });
  // As startJob does after the submit: a dependency already broken cancels it at once.
  if (job.waits === 'after') await settleSubmitted(deps(), job.id);
  return job;
};
const row = async (id: string) =>
  (await db.client<{ state: string; waits: string | null; endCause: string | null; reason: string | null }[]>`select * from jobs where id = ${id}`)[0]!;
/** Runs a queued job on the device (as a pass would claim it). */
const run = async (id: string) => (await claimDevices(db.client, id, 'h', [device]))!;

test('a dependent submitted while its dependency ends is settled by the end, never left waiting (raced, many rounds)', async () => {
  for (let round = 0; round < 30; round++) {
    const a = await submit();
    const claimed = await run(a.id);
    const fails = round % 2 === 1;
    const [, b] = await Promise.all([
      endJob(deps(), a.id, outcome(fails ? 1 : 0, null, null), { from: ['running'], fence: claimed.fence }),
      submit({ after: [a.id] }),
    ]);
    const now = await row(b.id);
    if (fails) assert.deepEqual([now.state, now.endCause], ['cancelled', 'dependency'], `round ${round}`);
    else assert.deepEqual([now.state, now.waits], ['queued', null], `round ${round}: released`);
    await db.client`update jobs set state = 'cancelled', end_cause = 'killed' where state in ('queued', 'running')`;
    await db.client`update leases set released_at = now() where released_at is null`;
  }
});

test("a submit waits on its dependency's end being stored, and reads its final state (the dependency's row is locked for share)", async () => {
  const a = await submit();
  const claimed = await run(a.id);
  let submitted: Promise<Awaited<ReturnType<typeof submit>>> | null = null;
  // An end in progress: its statement holds A's row (for update) and has not committed; the submit comes meanwhile.
  await db.client.begin(async (tx) => {
    await tx`select id from jobs where id = ${a.id} for update`;
    submitted = submit({ after: [a.id] });
    // Long enough for the submit to reach its lock (without it, the submit would read A running and commit meanwhile).
    await new Promise((r) => setTimeout(r, 300));
    await tx`update jobs set state = 'failed', exit_code = 4, end_cause = 'exit', ended_at = now() where id = ${a.id}`;
    await tx`update leases set released_at = now() where job_id = ${a.id} and fence = ${claimed.fence}`;
  });
  // The end's own follow-up never ran (the update above is not endJobs): only the submit's reading can have cancelled it.
  const b = await submitted!;
  assert.deepEqual([(await row(b.id)).state, (await row(b.id)).reason], ['cancelled', `${a.id}, which it runs after, failed (exit 4)`]);
});

test('a chain A → B → C: A fails, so B and C are cancelled in turn (cause dependency), each naming the job before it', async () => {
  const a = await submit();
  const b = await submit({ after: [a.id] });
  const c = await submit({ after: [b.id] });
  const d = await submit({ afterAny: [b.id] });
  assert.deepEqual([(await row(b.id)).waits, (await row(c.id)).waits], ['after', 'after']);
  const claimed = await run(a.id);
  await endJob(deps(), a.id, outcome(1, null, null), { from: ['running'], fence: claimed.fence });
  assert.deepEqual(await row(b.id), {
    ...(await row(b.id)),
    state: 'cancelled',
    endCause: 'dependency',
    reason: `${a.id}, which it runs after, failed (exit 1)`,
  });
  assert.deepEqual([(await row(c.id)).state, (await row(c.id)).reason], ['cancelled', `${b.id}, which it runs after, was cancelled for its own dependency`]);
  // --after-any: B's cancellation is an end too: D may start.
  assert.deepEqual([(await row(d.id)).state, (await row(d.id)).waits], ['queued', null]);
  await db.client`update jobs set state = 'cancelled', end_cause = 'killed' where state in ('queued', 'running')`;
});

test('a dependency that already failed cancels at submit; one already succeeded lets it queue as any job', async () => {
  const ok = await submit();
  await endJob(deps(), ok.id, outcome(0, null, null), { from: ['running'], fence: (await run(ok.id)).fence });
  const bad = await submit();
  await endJob(deps(), bad.id, outcome(2, null, null), { from: ['running'], fence: (await run(bad.id)).fence });
  const fine = await submit({ after: [ok.id] });
  assert.equal(fine.waits, null);
  const doomed = await submit({ after: [ok.id, bad.id] });
  assert.deepEqual([(await row(doomed.id)).state, (await row(doomed.id)).reason], ['cancelled', `${bad.id}, which it runs after, failed (exit 2)`]);
  const stored = (await db.client<{ n: number }[]>`select count(*)::int as n from job_deps where job_id = ${doomed.id}`)[0]!.n;
  assert.equal(stored, 2);
  await db.client`update jobs set state = 'cancelled', end_cause = 'killed' where state in ('queued', 'running')`;
});

test('an unknown dependency is refused at submit and nothing is stored', async () => {
  const before = (await db.client<{ n: number }[]>`select count(*)::int as n from jobs`)[0]!.n;
  await assert.rejects(
    submitJob({ sql: db.client, inventory: new Inventory(db.client) }, who, { ...base, after: ['jzzzzzzzzzz'] }),
    (e: unknown) => e instanceof RcError && e.code === 'bad_dependency' && /--after jzzzzzzzzzz: no job has that id or name/.test(e.message),
  );
  await assert.rejects(
    submitJob({ sql: db.client, inventory: new Inventory(db.client) }, who, { ...base, afterAny: ['no-such-name'] }),
    (e: unknown) => e instanceof RcError && e.code === 'bad_dependency',
  );
  assert.equal((await db.client<{ n: number }[]>`select count(*)::int as n from jobs`)[0]!.n, before);
});

test('the sweep settles what an end left (its controller died between the end and its follow-up)', async () => {
  const a = await submit();
  const b = await submit({ after: [a.id] });
  const claimed = await run(a.id);
  // The end alone, as if the process stopped before endJobs' follow-up statement.
  await storeEnds(deps(), [{ jobId: a.id, end: outcome(0, null, null), fence: claimed.fence, host: null }], { from: ['running'] });
  assert.equal((await row(b.id)).waits, 'after');
  let poked = 0;
  await sweepWaits({ ...deps(), released: () => poked++ });
  assert.deepEqual([(await row(b.id)).state, (await row(b.id)).waits], ['queued', null]);
  assert.ok(poked > 0, 'the passes are woken');
  await db.client`update jobs set state = 'cancelled', end_cause = 'killed' where state in ('queued', 'running')`;
});

test("the statement that queues a failed attempt again agrees with core's runsAgain (--retries beside --restarts)", async () => {
  for (const retries of [0, 1, 2]) {
    for (const restarts of [0, 1]) {
      const j = await submit({ retries, restarts, retryDelayS: retries ? 1 : 0 });
      const seen: boolean[] = [];
      // Fail, then lose, then fail...: each attempt's end as core says.
      for (let i = 0; i < 5; i++) {
        const cur = (await db.client<{ attempt: number; retried: number; state: string }[]>`select * from jobs where id = ${j.id}`)[0]!;
        if (cur.state !== 'queued') break;
        await db.client`update jobs set waits = null, not_before = null where id = ${j.id}`;
        const fence = (await run(j.id)).fence;
        const end = i % 2 === 0 ? outcome(1, null, null) : ended('lost', 'lost', 'gone');
        const want = runsAgain({ attempt: cur.attempt, restarts, retryOnPreempt: false, retries, retried: cur.retried }, end);
        const done = await endJob(deps(), j.id, end, { from: ['running'], fence });
        await db.client`update leases set released_at = now() where released_at is null`;
        assert.equal(done?.again ?? false, want, `retries ${retries} restarts ${restarts} attempt ${cur.attempt} ${end.state}`);
        if (done?.again && end.state === 'failed') assert.deepEqual([done.waits, done.notBefore !== null], ['retry', true], 'waits out its --retry-delay');
        seen.push(want);
      }
      assert.ok(seen.length > 0);
    }
  }
});

test("a spot machine taken back: the statement queues the job again as core's runsAgain says, --restarts times, then it ends preempted", async () => {
  for (const restarts of [0, 2]) {
    const j = await submit({ restarts });
    const outcomes: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      const cur = (await db.client<{ attempt: number; retried: number; state: string }[]>`select * from jobs where id = ${j.id}`)[0]!;
      if (cur.state !== 'queued') break;
      const fence = (await run(j.id)).fence;
      const end = ended('preempted', 'spot', 'the provider took back the spot machine m0 it ran on');
      const want = runsAgain({ attempt: cur.attempt, restarts, retryOnPreempt: false, retries: 0, retried: cur.retried }, end);
      const done = await endJob(deps(), j.id, end, { from: ['running'], fence });
      await db.client`update leases set released_at = now() where released_at is null`;
      assert.equal(done?.again ?? false, want, `restarts ${restarts} attempt ${cur.attempt}`);
      outcomes.push(want);
    }
    // restarts+1 attempts: each but the last queued again; the last ends the job preempted, cause spot.
    assert.deepEqual(outcomes, [...Array(restarts).fill(true), false]);
    const last = (await db.client<{ state: string; endCause: string }[]>`select state, end_cause from jobs where id = ${j.id}`)[0]!;
    assert.deepEqual({ ...last }, { state: 'preempted', endCause: 'spot' });
  }
});
