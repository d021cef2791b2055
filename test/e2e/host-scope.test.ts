// A host credential acts only for its own host. A second host's "worker",
// speaking the real protocol over socket.io with its own valid credential,
// tries every fence from 1 to 3000 on a job running on the first host: output,
// exit, terminal output, and a hello that claims the job. None of it may
// touch the job, and the refusals are audited (rate-limited).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import type { Socket } from 'socket.io-client';
import { Stack } from '../helpers/stack';

let stack: Stack;
let mallory: Socket;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }] });
  mallory = await stack.hostSocket('mallory');
  const hello = (await mallory.timeout(5000).emitWithAck('hello', { version: 'evil', hostLabels: [], devices: [{ index: 0, labels: [] }], running: [] })) as {
    ok: boolean;
  };
  assert.ok(hello.ok);
});
after(async () => {
  mallory?.close();
  await stack.stop();
});

test("another host's worker cannot store output in, end, or claim a job on this host, whatever fence it tries", { timeout: 60_000 }, async () => {
  let id = '';
  // The job runs until the test lets it end: the forgeries must not end it, however long they take to send.
  const dir = mkdtempSync(join(tmpdir(), 'rc-host-scope-'));
  const go = join(dir, 'go');
  const run = stack.cli(['run', '-d', 'alpha:gpu0', '--', 'sh', '-c', `echo "$RC_JOB_ID"; while [ ! -e ${go} ]; do sleep 0.05; done; echo real-end`], {
    onSpawn: (c) =>
      c.stdout!.on('data', (d: Buffer) => {
        id ||= d.toString().split('\n')[0]!.trim();
      }),
  });
  await stack.waitFor(() => id !== '', 'the job to start');

  const exits: Promise<unknown>[] = [];
  for (let fence = 1; fence <= 3000; fence++) {
    mallory.emit('job:output', { jobId: id, fence, seq: 1000 + fence, stream: 1, data: Buffer.from(`forged ${fence}\n`) });
    mallory.emit('tty:output', { jobId: id, fence, data: Buffer.from('forged tty') });
    exits.push(
      mallory
        .timeout(10_000)
        .emitWithAck('job:exit', { jobId: id, fence, exitCode: 0, signal: null, lastSeq: 0 })
        .catch(() => null),
    );
  }
  await Promise.all(exits);
  // A hello that says it runs the job (with any fence) must not make the controller resume or ack it for mallory.
  const claim = (await mallory.timeout(5000).emitWithAck('hello', {
    version: 'evil',
    hostLabels: [],
    devices: [{ index: 0, labels: [] }],
    running: Array.from({ length: 50 }, (_, i) => ({ jobId: id, fence: i + 1 })),
  })) as { ok: boolean; resume?: Record<string, number> };
  assert.deepEqual(claim.resume ?? {}, {}, "no resume point for a job that is not mallory's");

  assert.equal((await stack.job(id)).state, 'running', 'the job still runs');
  writeFileSync(go, '');
  const done = await run;
  rmSync(dir, { recursive: true, force: true });
  assert.equal(done.code, 0, done.stderr);
  assert.equal(done.stdout, `${id}\nreal-end\n`, 'only the real output reached rc run');
  const logs = await stack.cli(['logs', id]);
  assert.equal(logs.stdout, `${id}\nreal-end\n`, 'only the real output was stored');
  const job = await stack.job(id);
  assert.deepEqual([job.state, job.exitCode], ['succeeded', 0]);

  const sql = postgres(stack.dbUrl, { max: 1 });
  const rows = await sql<
    { actor: string; action: string; detail: { host: string; refused: number } }[]
  >`select actor, action, detail from audit where action = 'worker.refused'`;
  await sql.end();
  assert.ok(rows.length >= 1 && rows.length <= 5, `refusals are audited, rate-limited: ${rows.length} rows`);
  assert.ok(rows.every((r) => r.actor === 'host:mallory'));
});
