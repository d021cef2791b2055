// A hold the controller releases for idleness (RC_IDLE_HOLD_RELEASE) ends one
// way, said in one sentence everywhere: killed, cause idle_hold, no exit code
// of its own (a hold runs no command), and the reason `idle hold released: its
// GPUs were idle for 3s (RC_IDLE_HOLD_RELEASE)` in rc hold's last line, the job
// (GET /api/jobs/:id: the dashboard's job page), rc jobs and rc describe;
// rc hold and rc wait exit 216. Not a SIGTERM's 143 from the worker's report,
// and not "the worker did not report the kill" when the watchdog first sees a
// hold already past its grace. The worker's later report changes nothing.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import { fakeNvidiaSmiDir, setGpuUtilisation } from '../helpers/fake-nvidia-smi';
import { type CliResult, Stack } from '../helpers/stack';

const REASON = 'idle hold released: its GPUs were idle for 3s (RC_IDLE_HOLD_RELEASE)';

for (const [what, graceS] of [
  ['with the worker reporting the kill in its grace', '30'],
  ['when the watchdog first sees the hold past its grace', '0'],
] as const) {
  test(`an idle hold released: one cause and one sentence everywhere, ${what}`, { timeout: 120_000 }, async () => {
    const smi = fakeNvidiaSmiDir();
    setGpuUtilisation(smi, 0, 0);
    setGpuUtilisation(smi, 1, 80);
    const stack = await Stack.start({ workers: [], controllerEnv: { RC_IDLE_HOLD_RELEASE: '3s', RC_IDLE_HOLD_WARN: 'off', RC_WATCHDOG_GRACE_S: graceS } });
    try {
      await stack.startWorker('gpubox', 2, { PATH: `${smi}:${process.env.PATH}` });
      let out = '';
      let child: ChildProcess | null = null;
      const done: Promise<CliResult> = stack.cli(['hold', '-d', 'gpubox:gpu0', '--ttl', '1h'], {
        timeoutMs: 60_000,
        onSpawn: (c) => {
          child = c;
          c.stdout!.on('data', (b: Buffer) => (out += b.toString()));
        },
      });
      await stack.waitFor(() => out.includes('\n'), 'rc hold to print its hold');
      assert.ok(child);
      const id = /^hold (j\w+)/.exec(out)![1]!;
      const r = await done;
      assert.equal(r.code, 216, r.stderr);
      assert.ok(r.stderr.endsWith(`rc: idle: hold ${id} was released: ${REASON}\n`), r.stderr);
      // The worker's report of the kill (it frees the device) comes later and changes nothing.
      await stack.waitFor(async () => (await stack.devices()).find((d) => d.name === 'gpubox:gpu0')?.state === 'free', 'the device to be free');
      const job = ((await stack.api('GET', `/api/jobs/${id}`)).body as { job: { state: string; cause: string; exitCode: number | null; reason: string } }).job;
      assert.deepEqual(
        { state: job.state, cause: job.cause, exitCode: job.exitCode, reason: job.reason },
        { state: 'killed', cause: 'idle_hold', exitCode: null, reason: REASON },
      );
      const jobs = (await stack.cli(['jobs'])).stdout;
      assert.match(jobs, new RegExp(`^${id} +killed \\(${REASON.replace(/[()]/g, '\\$&')}\\) +- +gpubox:gpu0 `, 'm'));
      const described = (await stack.cli(['describe', id])).stdout;
      assert.ok(described.includes(`\nstate:     killed (${REASON})\n`), described);
      assert.ok(described.includes('\nexit:      -\n'), described);
      assert.equal((await stack.cli(['wait', id])).code, 216);
    } finally {
      await stack.stop();
    }
  });
}
