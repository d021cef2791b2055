// The database can move (issue 30): behind Patroni or CloudNativePG the primary
// changes. A real switchover here: a primary and a streaming standby of it, the
// controller given both in one URL (with target_session_attrs=read-write, and
// without: then its writes reach the standby until it is promoted), jobs
// printing while the primary stops (a fast shutdown, as a failover does) and the
// standby is promoted. Nothing may be lost, nothing leased twice; the controller
// says it is not ready while it cannot write, and carries on on the new primary
// without a restart.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Bus, type BusMessage } from '../../server/bus';
import { connect } from '../../server/db';
import { DbHealth } from '../../server/db-health';
import { type CliResult, Stack } from '../helpers/stack';
import { Replicated } from '../helpers/standby';
import { until } from '../helpers/until';

const dirs: string[] = [];
/** What each test started, stopped after it whether it passed or not. */
const started: { pg: Replicated | null; stack: Stack | null }[] = [];
const DEVICES = 4;
const LINES = 300;
/** CPU time a process has used (user and system), in ms, from /proc. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}
const lines = (n: number) => Array.from({ length: n }, (_, i) => `line-${i + 1}\n`).join('');

after(async () => {
  for (const s of started) {
    await s.stack?.stop();
    await s.pg?.stop();
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A primary with a standby streaming it. */
async function replicated(): Promise<Replicated> {
  const dir = mkdtempSync(join(tmpdir(), 'rc-switchover-'));
  dirs.push(dir);
  const s: { pg: Replicated | null; stack: Stack | null } = { pg: null, stack: null };
  started.push(s);
  s.pg = await Replicated.start(dir);
  return s.pg;
}

/** Besides, a controller (with worker alpha) given both servers in one URL with `params`. */
async function withController(params: string): Promise<{ pg: Replicated; stack: Stack }> {
  const pg = await replicated();
  const stack = await Stack.start({ databaseUrl: pg.bothUrl(params), hostTimeoutS: 5, workers: [{ name: 'alpha', devices: DEVICES }] });
  started[started.length - 1]!.stack = stack;
  return { pg, stack };
}

test('a standby: a health check on it is not ready, a bus waits to listen until it is promoted, read-write passes over it', {
  timeout: 120_000,
}, async () => {
  const pg = await replicated();
  // As a controller given the standby would: a SELECT 1 passes there, a write does not.
  const health = new DbHealth({ url: pg.url(pg.standbyPort), everyMs: 100, deadlineMs: 2000, log: () => {} });
  health.start();
  const bus = new Bus({ url: pg.url(pg.standbyPort), log: () => {} });
  const other = new Bus({ url: pg.url(pg.standbyPort), log: () => {} });
  const heard: BusMessage[] = [];
  let listened = false;
  const listening = bus.start(
    (m) => heard.push(m),
    () => {
      listened = true;
    },
  );
  try {
    await until(() => (health.up ? undefined : true), 'the health check on the standby to say it cannot write', 10_000);
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(health.up, false, 'still not ready while it is a standby');
    assert.equal(listened, false, 'a standby refuses LISTEN');
    // The controller's own client, given the standby first: target_session_attrs=read-write must pass over it.
    const both = connect(pg.bothUrl('target_session_attrs=read-write', [pg.standbyPort, pg.primaryPort]), 1);
    try {
      const [row] = await both.client<{ recovery: boolean; port: number }[]>`select pg_is_in_recovery() as recovery, current_setting('port')::int as port`;
      assert.deepEqual(row, { recovery: false, port: pg.primaryPort }, 'read-write connects to the primary, not to the standby listed first');
    } finally {
      await both.close();
    }
    await pg.stopPrimary();
    await pg.promote();
    await until(() => (health.up ? true : undefined), 'the health check to say the promoted standby is up', 15_000);
    await listening;
    await other.start(
      () => {},
      () => {},
    );
    other.publish({ t: 'poke' });
    await until(() => (heard.length ? true : undefined), 'the bus that started on the standby to hear a message', 15_000);
    assert.deepEqual(heard, [{ t: 'poke' }]);
  } finally {
    await health.stop();
    await bus.stop();
    await other.stop();
  }
});

for (const [params, what] of [
  ['target_session_attrs=read-write', 'with target_session_attrs=read-write'],
  ['', 'without target_session_attrs (writes reach the standby until it is promoted)'],
] as const) {
  test(`a standby promoted mid-run, ${what}: no job, line or lease lost or doubled; not ready while nothing takes writes`, {
    timeout: 300_000,
  }, async () => {
    const { pg, stack } = await withController(params);
    // Readiness as a probe sees it, every 100 ms from now to the end.
    const probes: { at: number; status: number }[] = [];
    let probing = true;
    const prober = (async () => {
      while (probing) {
        const at = Date.now();
        const status = await fetch(`${stack.controllerUrl}/api/devices`, {
          headers: { authorization: `Bearer ${stack.clientToken}` },
          signal: AbortSignal.timeout(5000),
        })
          .then((r) => r.status)
          .catch(() => 0);
        probes.push({ at, status });
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    const jobs = Array.from({ length: DEVICES - 1 }, (_, i) =>
      stack.runJob(['-d', `alpha:gpu${i}`], `for i in $(seq 1 ${LINES}); do echo line-$i; sleep 0.05; done`, { timeoutMs: 240_000 }),
    );
    const ids = await Promise.all(jobs.map((j) => j.id));
    const endedAt: number[] = [];
    for (const j of jobs) void j.done.then(() => endedAt.push(Date.now()));
    await new Promise((r) => setTimeout(r, 1500));

    const stoppedAt = Date.now();
    const cpuBefore = cpuMs(stack.controllerPid!);
    await pg.stopPrimary();
    // No primary for a while: the controller must say so (a SELECT 1 on the standby would pass).
    await stack.waitFor(async () => probes.some((p) => p.at > stoppedAt && p.status === 503), 'the controller to answer 503 with no primary', 20_000);
    // Longer than the health check's deadline (3 s): not ready all along, whichever way the check learns it.
    await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + 6000 - Date.now())));
    const promotedAt = Date.now();
    const cpuWithoutPrimary = cpuMs(stack.controllerPid!) - cpuBefore;
    const answeredMeanwhile = probes.filter((p) => p.at > stoppedAt + 4500 && p.status !== 503);
    assert.deepEqual(answeredMeanwhile, [], 'not ready while no server takes writes');
    await pg.promote();
    // New work, on the new primary, without restarting anything: a submit, and a job that runs.
    await stack.waitFor(async () => (await stack.api('GET', '/api/devices')).status === 200, 'the controller to be ready on the new primary', 60_000);
    const readyAt = Date.now();
    const later = await stack.cli(['run', '-d', `alpha:gpu${DEVICES - 1}`, '--', 'sh', '-c', 'echo "$RC_JOB_ID"; echo after'], { timeoutMs: 120_000 });
    assert.equal(later.code, 0, later.stderr);

    const results: CliResult[] = await Promise.all(jobs.map((j) => j.done));
    assert.ok(Math.min(...endedAt) > promotedAt, 'the jobs ran across the switchover');
    probing = false;
    await prober;
    for (const [i, done] of results.entries()) {
      assert.equal(done.code, 0, `job ${ids[i]}: ${done.stderr}`);
      assert.equal(done.stdout, `${ids[i]}\n${lines(LINES)}`, `job ${ids[i]}'s live stream is whole`);
    }
    const laterId = later.stdout.split('\n')[0]!;
    assert.equal(later.stdout, `${laterId}\nafter\n`);

    let linesLost = 0;
    for (const id of [...ids, laterId]) {
      const job = await stack.job(id);
      assert.deepEqual([job.state, job.exitCode], ['succeeded', 0], `job ${id}`);
      const logs = await stack.cli(['logs', id]);
      assert.equal(logs.code, 0, logs.stderr);
      const want = id === laterId ? 1 : LINES;
      const stored = logs.stdout.split('\n').filter((l) => /^line-|^after$/.test(l)).length;
      linesLost += want - stored;
      assert.equal(logs.stdout, `${id}\n${id === laterId ? 'after\n' : lines(LINES)}`, `job ${id}'s stored output is whole, each line once`);
    }

    // Leases, read on the new primary: none left active, and no device ever held by two at once.
    const db = connect(pg.url(pg.standbyPort), 1);
    try {
      const active = await db.client`select count(*)::int as n from leases where released_at is null`;
      assert.equal(active[0]!.n, 0, 'every lease was released');
      const overlaps = await db.client`
        select a.device_id from leases a join leases b on a.device_id = b.device_id and a.id < b.id
        where tstzrange(a.acquired_at, a.released_at) && tstzrange(b.acquired_at, b.released_at)`;
      assert.equal(overlaps.length, 0, `a device leased twice at once: ${JSON.stringify(overlaps)}`);
      const lost = await db.client`select count(*)::int as n from jobs where state not in ('succeeded')`;
      assert.equal(lost[0]!.n, 0, 'no job ended otherwise');
      // The controller listens again, on the new primary (its catch-up runs when it does: server/controller.ts).
      await stack.waitFor(
        async () => (await db.client`select 1 from pg_stat_activity where application_name = 'rc-bus' and query ilike 'listen%'`).length > 0,
        "the controller's bus to listen on the new primary",
        30_000,
      );
    } finally {
      await db.close();
    }

    const down = probes.filter((p) => p.status !== 200);
    console.log(
      `switchover ${what}: ${ids.length} jobs running across it and 1 after, jobs lost 0, lines lost ${linesLost}; ` +
        `primary stopped → first 503 ${down.length ? down[0]!.at - stoppedAt : '-'} ms, stopped → promoted ${promotedAt - stoppedAt} ms, ` +
        `promoted → ready ${readyAt - promotedAt} ms; controller CPU with no primary ${cpuWithoutPrimary} ms in ${promotedAt - stoppedAt} ms; not ready (503s, first to last) ${down.length ? down[down.length - 1]!.at - down[0]!.at : 0} ms`,
    );
    assert.equal(linesLost, 0);
    assert.ok(
      probes.every((p) => p.status === 200 || p.status === 503),
      `every probe had an answer, 200 or 503: ${JSON.stringify(probes.filter((p) => p.status !== 200 && p.status !== 503))}`,
    );
  });
}
