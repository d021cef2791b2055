// rc usage and GET /api/usage against leases of known length: device-hours
// by kind, the idle part from the (fake) GPU samples, CPU slots with no
// signal, each grouping, the drill-down to the leases, the same over time in
// buckets (GET /api/usage/series), and bad input.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fakeNvidiaSmiDir, setGpuUtilisation } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';
import type { UsageReport, UsageSeries } from '../../protocol/wire';

const smi = fakeNvidiaSmiDir();
let stack: Stack;
const ids: Record<string, string> = {};
before(async () => {
  setGpuUtilisation(smi, 0, 0);
  setGpuUtilisation(smi, 1, 80);
  stack = await Stack.start({ hostTimeoutS: 3, workers: [{ name: 'cpubox', devices: 1 }] });
  await stack.startWorker('gpubox', 2, { PATH: `${smi}:${process.env.PATH}` });
  // An idle job (gpu0 at 0%), a busy one (gpu1 at 80%) and one on a CPU slot, by two submitters, at once.
  const runs = [
    ['idle', 'alice', ['-d', 'gpubox:gpu0'], 'sleep 4'],
    ['busy', 'alice', ['-d', 'gpubox:gpu1'], 'sleep 4'],
    ['cpu', 'bob', ['-d', 'cpubox:gpu0'], 'sleep 2'],
  ] as const;
  await Promise.all(
    runs.map(async ([name, who, args, script]) => {
      const r = await stack.cli(['run', ...args, '--', 'sh', '-c', `echo "$RC_JOB_ID"; ${script}`], { env: { RC_SUBMITTER: who } });
      assert.equal(r.code, 0, r.stderr);
      ids[name] = r.stdout.trim();
    }),
  );
});
after(async () => stack.stop());

const report = async (query: string) => {
  const r = await stack.api('GET', `/api/usage?${query}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body as UsageReport;
};
/** Its lease's length: from its start to its end, as the job says them. */
const ran = async (name: string) => {
  const j = (await stack.api('GET', `/api/jobs/${ids[name]}`)).body as { job: { startedAt: string; endedAt: string } };
  return (Date.parse(j.job.endedAt) - Date.parse(j.job.startedAt)) / 1000;
};
const near = (actual: number, expected: number, slack: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= slack, `${what}: ${actual.toFixed(2)} s, expected ${expected.toFixed(2)} ± ${slack}`);

test('leased seconds per submitter match the leases; the idle part is the idle GPU’s; a CPU slot has no signal', async () => {
  const r = await report('by=submitter&since=1h');
  const alice = r.rows.find((x) => x.key === 'alice')!;
  const bob = r.rows.find((x) => x.key === 'bob')!;
  near(alice.leasedS, (await ran('idle')) + (await ran('busy')), 1, 'alice leased');
  near(alice.jobsS, alice.leasedS, 0.01, 'all of it jobs');
  assert.equal(alice.holdsS + alice.terminalsS, 0);
  // gpu0 sat at 0% with no process the whole time (less the first sample); gpu1 at 80%.
  near(alice.idleS, await ran('idle'), 2.5, 'alice idle');
  assert.ok(alice.idleS > 1, `some idle time: ${alice.idleS}`);
  near(bob.leasedS, await ran('cpu'), 1, 'bob leased');
  assert.equal(bob.idleS, 0);
  near(bob.noSignalS, bob.leasedS, 0.01, 'a CPU slot: no signal');
  // Which of the time without a signal was on CPU slots: bob's all, alice's (GPUs) none.
  near(bob.cpuSlotS, bob.leasedS, 0.01, 'bob on a CPU slot');
  assert.equal(alice.cpuSlotS, 0);
  near(r.total.cpuSlotS, bob.leasedS, 0.01, 'the total on CPU slots');
  // The total is the rows'.
  near(r.total.leasedS, alice.leasedS + bob.leasedS, 0.01, 'total');
  near(r.total.idleS, alice.idleS, 0.01, 'total idle');
});

test('by host, model and token; the drill-down lists the leases behind a key', async () => {
  const byModel = await report('by=model&since=1h');
  assert.deepEqual(byModel.rows.map((x) => x.key).sort(), ['H100', 'RTX4090', 'none (CPU slot)']);
  assert.ok(byModel.rows.find((x) => x.key === 'H100')!.idleS > 1);
  assert.equal(byModel.rows.find((x) => x.key === 'RTX4090')!.idleS, 0);
  const byHost = await report('by=host&since=1h');
  assert.deepEqual(byHost.rows.map((x) => x.key).sort(), ['cpubox', 'gpubox']);
  const byToken = await report('by=token&since=1h');
  assert.equal(byToken.rows.length, 1);
  assert.match(byToken.rows[0]!.key, /^\d+ /);
  const drill = await report('by=submitter&since=1h&key=alice');
  assert.deepEqual(drill.leases!.map((l) => l.jobId).sort(), [ids.idle, ids.busy].sort());
  const idleLease = drill.leases!.find((l) => l.jobId === ids.idle)!;
  assert.equal(idleLease.device, 'gpubox:gpu0');
  assert.ok((idleLease.idleS ?? 0) > 1);
  assert.equal((await report('by=submitter&since=1h&key=bob')).leases![0]!.idleS, null);
});

test('rc usage prints the table, the total and the idle share; --json is the API’s answer', async () => {
  const r = await stack.cli(['usage', '--since', '1h']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^SUBMITTER\s+LEASED\s+JOBS\s+TERMINALS\s+HOLDS\s+IDLE\s+IDLE%$/m);
  assert.match(r.stdout, /^alice\s+\d+s\s+\d+s\s+0\s+0\s+\d+s\s+\d+%$/m);
  assert.match(r.stdout, /^bob\s+\d+s\s+\d+s\s+0\s+0\s+0\s+-$/m);
  assert.match(r.stdout, /^TOTAL\s/m);
  assert.match(r.stdout, /\d+% of the leased GPU time was idle; \S+ on CPU slots, with no GPU signal/);
  const asJson = JSON.parse((await stack.cli(['usage', '--since', '1h', '--by', 'host', '--json'])).stdout) as UsageReport;
  assert.equal(asJson.by, 'host');
  const leases = await stack.cli(['usage', '--since', '1h', 'alice']);
  assert.match(leases.stdout, new RegExp(`${ids.idle}\\s+job\\s+alice\\s+gpubox:gpu0`));
  // Outside the window: nothing.
  const old = await report('by=submitter&since=1m');
  assert.ok(old.rows.length >= 1);
});

test('GET /api/usage/series: buckets that sum to the report; bad input and wrong credentials refused', async () => {
  const series = (await stack.api('GET', '/api/usage/series?since=24h&by=submitter')).body as UsageSeries;
  const report = (await stack.api('GET', '/api/usage?since=24h&by=submitter')).body as UsageReport;
  assert.equal(series.stepS, 3600);
  assert.equal(series.at.length, 24 + (series.at[0]! + 24 * 3600 < Date.now() / 1000 ? 1 : 0));
  assert.deepEqual(series.series.map((s) => s.key).sort(), ['alice', 'bob']);
  assert.equal(series.others, null);
  for (const s of series.series) {
    const row = report.rows.find((r) => r.key === s.key)!;
    const sum = (v: number[]) => v.reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum(s.leasedS) - row.leasedS) < 0.5, `${s.key}: ${sum(s.leasedS)} leased in the buckets, ${row.leasedS} in the report`);
    assert.ok(Math.abs(sum(s.idleS) - row.idleS) < 0.5, `${s.key}: ${sum(s.idleS)} idle in the buckets, ${row.idleS} in the report`);
  }
  for (const [q, message] of [
    ['since=soon', /since: a duration from 1m to 366d/],
    ['since=400d', /since: a duration from 1m to 366d/],
    ['by=colour', /by: one of submitter, token, host, model, team/],
    ['key=alice', /key: GET \/api\/usage\/series takes only since and by/],
  ] as const) {
    const r = await stack.api('GET', `/api/usage/series?${q}`);
    assert.equal(r.status, 400, q);
    assert.equal((r.body as { error: { code: string } }).error.code, 'bad_request', q);
    assert.match((r.body as { error: { message: string } }).error.message, message, q);
  }
  assert.equal((await stack.api('GET', '/api/usage/series', undefined, null)).status, 401);
  const host = await stack.api('GET', '/api/usage/series', undefined, stack.hostCredential('cpubox'));
  assert.equal(host.status, 403);
  assert.equal((host.body as { error: { code: string } }).error.code, 'forbidden');
});

test('bad input: --since, --by, a key too long; no token, a host credential', async () => {
  for (const [q, message] of [
    ['since=soon', /since: a duration from 1m to 366d/],
    ['since=10s', /since: a duration from 1m to 366d/],
    ['since=400d', /since: a duration from 1m to 366d/],
    ['by=colour', /by: one of submitter, token, host, model/],
    [`key=${'x'.repeat(301)}`, /key: at most 300 characters/],
  ] as const) {
    const r = await stack.api('GET', `/api/usage?${q}`);
    assert.equal(r.status, 400, q);
    assert.match((r.body as { error: { code: string; message: string } }).error.message, message, q);
  }
  assert.equal((await stack.api('GET', '/api/usage', undefined, null)).status, 401);
  // A host's credential is for its worker, not for reading who used the fleet.
  const host = await stack.api('GET', '/api/usage', undefined, stack.hostCredential('cpubox'));
  assert.equal(host.status, 403);
  assert.equal((host.body as { error: { code: string } }).error.code, 'forbidden');
  const cli = await stack.cli(['usage', '--by', 'colour']);
  assert.equal(cli.code, 2);
  assert.match(cli.stderr, /--by takes one of submitter, token, host, model/);
  assert.equal((await stack.cli(['usage', 'a', 'b'])).code, 2);
  assert.equal((await stack.cli(['usage', '--since', 'soon'])).code, 2);
});
