// rc cp against a job that races it: in the workspace, a folder is swapped for
// a link to a folder outside, and back, in a tight loop, while copies go down
// and up through it. Not one read may come from outside, not one write land there.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

const N = 500;
const LANES = 4;
const SUBMITTER = 'racer';
const INSIDE = 'inside the workspace\n';
const SECRET = 'SECRET outside the workspace\n';

// What a job on the host runtime can do in its workspace: `swap` is a real folder,
// then a link to the folder outside, and back, as fast as rename goes.
const RACER = `
const { renameSync } = require('node:fs');
for (;;) { renameSync('swap', 'swap.dir'); renameSync('swap.link', 'swap'); renameSync('swap', 'swap.link'); renameSync('swap.dir', 'swap'); }
`;

let stack: Stack;
let ws = '';
let outside = '';
let racer: ChildProcess | null = null;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }] });
  ws = join(stack.dataDir, 'ws-alpha');
  outside = join(stack.dataDir, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'data.txt'), SECRET);
  mkdirSync(join(ws, 'swap'));
  writeFileSync(join(ws, 'swap', 'data.txt'), INSIDE);
  symlinkSync(outside, join(ws, 'swap.link'));
});
after(async () => {
  await stopRacer();
  await stack.stop();
});

async function stopRacer(): Promise<void> {
  const child = racer;
  racer = null;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Runs fn(0..n-1), `lanes` at a time. */
async function inLanes<T>(n: number, lanes: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

test('rc cp cannot be raced out of the workspace by a job that swaps a folder for a link', async (t) => {
  const held = await stack.api('POST', '/api/jobs', { kind: 'hold', ttlS: 300, submitter: SUBMITTER, device: 'alpha:gpu0' });
  assert.equal(held.status, 201, JSON.stringify(held.body));
  const holdId = (held.body as { job: { id: string } }).job.id;
  await stack.waitFor(async () => (await stack.job(holdId)).state === 'running', 'the hold to start');

  const files = `/api/devices/alpha:gpu0/files?submitter=${SUBMITTER}&path=`;
  racer = spawn(process.execPath, ['-e', RACER], { cwd: ws, stdio: 'ignore' });
  const started = Date.now();
  const downs = await inLanes(N, LANES, () => stack.api('GET', `${files}/workspace/swap/data.txt`));
  const ups = await inLanes(N, LANES, (i) => stack.api('PUT', `${files}/workspace/swap/up-${i}.txt`, `upload ${i}\n`));
  await stopRacer();
  const seconds = (Date.now() - started) / 1000;

  const outsideReads = downs.filter((r) => r.status === 200 && r.body === SECRET).length;
  const strays = readdirSync(outside).filter((f) => f !== 'data.txt');
  // The racer stopped anywhere in its loop: the real folder is `swap` or `swap.dir`, and `swap` may be the link.
  const insideDir = join(ws, existsSync(join(ws, 'swap')) && lstatSync(join(ws, 'swap')).isDirectory() ? 'swap' : 'swap.dir');
  const landed = ups.filter((r) => r.status === 200).length;
  const counts = (rs: { status: number }[]) => {
    const by: Record<number, number> = {};
    for (const r of rs) by[r.status] = (by[r.status] ?? 0) + 1;
    return JSON.stringify(by);
  };
  t.diagnostic(
    `cp race: ${outsideReads} of ${N} downloads read the file outside, ${strays.length} of ${N} uploads wrote outside (${strays.slice(0, 5).join(' ')}); downloads ${counts(downs)}, uploads ${counts(ups)}; ${seconds.toFixed(1)}s`,
  );

  assert.equal(outsideReads, 0, `${outsideReads} of ${N} downloads read the file outside the workspace`);
  assert.deepEqual(strays, [], `${strays.length} of ${N} uploads wrote outside the workspace`);
  assert.equal(readFileSync(join(outside, 'data.txt'), 'utf8'), SECRET, 'the file outside is untouched');
  // Every answer is the file inside or a clear refusal: the link (400) or, mid-swap, nothing there (404).
  for (const r of [...downs, ...ups]) {
    if (r.status === 200) continue;
    assert.ok([400, 404].includes(r.status), JSON.stringify(r));
    assert.match(JSON.stringify(r.body), /link|does not exist/);
  }
  assert.ok(
    downs.some((r) => r.status === 200),
    'some downloads found the folder in place',
  );
  for (const r of downs) if (r.status === 200) assert.equal(r.body, INSIDE);
  ups.forEach((r, i) => {
    if (r.status === 200) assert.equal(readFileSync(join(insideDir, `up-${i}.txt`), 'utf8'), `upload ${i}\n`);
  });
  assert.equal(readdirSync(insideDir).filter((f) => f.startsWith('up-')).length, landed, 'every upload that succeeded landed inside, and no other');

  const released = await stack.api('POST', `/api/holds/${holdId}/release`, { submitter: SUBMITTER });
  assert.equal(released.status, 200, JSON.stringify(released.body));
});
