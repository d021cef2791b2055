// rc cp: one file up or down through the controller, under a lease.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

let stack: Stack;
let ws = '';
const local = mkdtempSync(join(tmpdir(), 'rc-cp-local-'));
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 2 }] });
  ws = join(stack.dataDir, 'ws-alpha');
});
after(async () => stack.stop());

const leftovers = (dir: string) => readdirSync(dir).filter((f) => f.includes('rc-cp'));

test('a file goes up and comes back byte for byte, in pieces, under a short lease of its own', async () => {
  const data = randomBytes(3 * 1024 * 1024 + 123);
  writeFileSync(join(local, 'model.bin'), data);
  const up = await stack.cli(['cp', join(local, 'model.bin'), 'alpha:gpu0:/workspace/']);
  assert.equal(up.code, 0, up.stderr);
  assert.equal(up.stdout, `${join(local, 'model.bin')} -> alpha:gpu0:/workspace/model.bin (${data.length} bytes)\n`);
  assert.ok(readFileSync(join(ws, 'model.bin')).equals(data), 'the file is in the host workspace');
  mkdirSync(join(local, 'back'));
  const down = await stack.cli(['cp', 'alpha:gpu0:/workspace/model.bin', join(local, 'back')]);
  assert.equal(down.code, 0, down.stderr);
  assert.ok(readFileSync(join(local, 'back', 'model.bin')).equals(data));
  const rel = await stack.cli(['cp', 'alpha:gpu0:model.bin', join(local, 'again.bin')]);
  assert.equal(rel.code, 0, 'a relative device path is relative to the workspace');
  const jobs = (await stack.api('GET', '/api/jobs?limit=10')).body as { jobs: { kind: string; state: string; argv: string[] }[] };
  const cps = jobs.jobs.filter((j) => j.kind === 'cp');
  assert.equal(cps.length, 3);
  assert.ok(cps.every((j) => j.state === 'succeeded'));
  assert.deepEqual(cps.at(-1)!.argv, ['cp', 'up', '/workspace/model.bin']);
  assert.ok(
    (await stack.devices()).every((d) => d.state === 'free'),
    'the short leases are released',
  );
  assert.deepEqual(leftovers(ws), []);
  assert.deepEqual(leftovers(local), []);
});

test('a file over the cap is refused with a pointer to shared storage, and nothing is written', async () => {
  writeFileSync(join(local, 'big.bin'), Buffer.alloc(16 * 1024 * 1024 + 1));
  const r = await stack.cli(['cp', join(local, 'big.bin'), 'alpha:gpu0:/workspace/']);
  assert.equal(r.code, 211);
  assert.match(r.stderr, /payload_too_large: .* at most 16 MiB .*shared storage/);
  assert.equal(existsSync(join(ws, 'big.bin')), false);
  const api = await stack.api(
    'PUT',
    '/api/devices/alpha:gpu0/files?path=/workspace/big.bin&submitter=x',
    Buffer.alloc(16 * 1024 * 1024 + 1).toString('latin1'),
  );
  assert.equal(api.status, 413);
  writeFileSync(join(ws, 'huge.bin'), Buffer.alloc(16 * 1024 * 1024 + 1));
  const down = await stack.cli(['cp', 'alpha:gpu0:/workspace/huge.bin', join(local, 'huge.bin')]);
  assert.equal(down.code, 211);
  assert.match(down.stderr, /at most 16 MiB/);
  assert.equal(existsSync(join(local, 'huge.bin')), false);
});

test('paths cannot leave the workspace, by .. or by a link; no link is followed, and a FIFO does not hang the worker', async () => {
  symlinkSync('/etc', join(ws, 'evil'));
  mkdirSync(join(ws, 'sub'));
  writeFileSync(join(ws, 'sub', 'f.txt'), 'f');
  symlinkSync(join(ws, 'sub'), join(ws, 'inner'));
  assert.equal(spawnSync('mkfifo', [join(ws, 'pipe')]).status, 0);
  writeFileSync(join(local, 'x.txt'), 'x');
  for (const [args, why] of [
    [['cp', 'alpha:gpu0:/workspace/../../etc/hostname', local], /outside \/workspace/],
    [['cp', 'alpha:gpu0:/etc/hostname', local], /outside \/workspace/],
    [['cp', join(local, 'x.txt'), 'alpha:gpu0:/tmp/x.txt'], /outside \/workspace/],
    [['cp', 'alpha:gpu0:/workspace/evil/hostname', local], /link that leads out of the workspace/],
    [['cp', join(local, 'x.txt'), 'alpha:gpu0:/workspace/evil/x.txt'], /leads out of the workspace through a link/],
    [['cp', join(local, 'x.txt'), 'alpha:gpu0:/workspace/evil'], /\/workspace\/evil is a link; rc cp does not write through links/],
    [['cp', 'alpha:gpu0:/workspace/inner/f.txt', local], /\/workspace\/inner is a link; rc cp follows no links, even ones that stay in the workspace/],
    [['cp', join(local, 'x.txt'), 'alpha:gpu0:/workspace/inner/x.txt'], /\/workspace\/inner is a link; rc cp follows no links/],
    [['cp', 'alpha:gpu0:/workspace/pipe', local], /\/workspace\/pipe is not a regular file/],
  ] as [string[], RegExp][]) {
    const r = await stack.cli(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, why);
  }
  assert.equal(existsSync('/etc/x.txt'), false);
  assert.equal(existsSync(join(ws, 'sub', 'x.txt')), false);
  assert.deepEqual(leftovers(ws), []);
});

test('a device someone else holds is refused by name; your own hold is used', async () => {
  writeFileSync(join(local, 'a.txt'), 'hello');
  let aliceOut = '';
  const alice = stack.cli(['hold', '-d', 'alpha:gpu0', '--ttl', '1m'], {
    env: { RC_SUBMITTER: 'alice' },
    onSpawn: (c) =>
      c.stdout!.on('data', (b: Buffer) => {
        aliceOut += b.toString();
      }),
  });
  await stack.waitFor(() => aliceOut.includes('\n'), 'alice to hold gpu0');
  const aliceHold = /^hold (j\w+)/.exec(aliceOut)![1]!;
  const refused = await stack.cli(['cp', join(local, 'a.txt'), 'alpha:gpu0:/workspace/']);
  assert.equal(refused.code, 202);
  assert.match(
    refused.stderr,
    new RegExp(`alpha:gpu0 is held by alice \\(hold ${aliceHold}\\); rc cp only copies to or from a device that is free or that you hold`),
  );

  let mine = '';
  const myHold = stack.cli(['hold', '-d', 'alpha:gpu1', '--ttl', '1m'], {
    onSpawn: (c) =>
      c.stdout!.on('data', (b: Buffer) => {
        mine += b.toString();
      }),
  });
  await stack.waitFor(() => mine.includes('\n'), 'my hold on gpu1');
  const before = ((await stack.api('GET', '/api/jobs?limit=50')).body as { jobs: unknown[] }).jobs.length;
  const ok = await stack.cli(['cp', join(local, 'a.txt'), 'alpha:gpu1:/workspace/held.txt']);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(readFileSync(join(ws, 'held.txt'), 'utf8'), 'hello');
  const afterCount = ((await stack.api('GET', '/api/jobs?limit=50')).body as { jobs: unknown[] }).jobs.length;
  assert.equal(afterCount, before, 'no extra lease under your own hold');
  await stack.cli(['release', /^hold (j\w+)/.exec(mine)![1]!]);
  await stack.cli(['release', aliceHold], { env: { RC_SUBMITTER: 'alice' } });
  await Promise.all([alice, myHold]);
});

test('a failed copy leaves no partial file on either side', async () => {
  const missing = await stack.cli(['cp', 'alpha:gpu0:/workspace/nope.txt', join(local, 'nope.txt')]);
  assert.equal(missing.code, 208);
  assert.match(missing.stderr, /\/workspace\/nope\.txt does not exist on the device host/);
  assert.equal(existsSync(join(local, 'nope.txt')), false);
  writeFileSync(join(local, 'b.txt'), 'b');
  const noDir = await stack.cli(['cp', join(local, 'b.txt'), 'alpha:gpu0:/workspace/no/such/dir/b.txt']);
  assert.equal(noDir.code, 208);
  assert.match(noDir.stderr, /the folder \/workspace\/no\/such\/dir does not exist/);
  const noLocal = await stack.cli(['cp', join(local, 'absent.txt'), 'alpha:gpu0:/workspace/']);
  assert.equal(noLocal.code, 208);
  assert.deepEqual(leftovers(ws), []);
  assert.deepEqual(leftovers(local), []);
  // Refused copies leave no failed job behind: nothing was copied, and nothing failed.
  const cps = ((await stack.api('GET', '/api/jobs?kind=cp&limit=200')).body as { jobs: { state: string; argv: string[] }[] }).jobs;
  assert.equal(cps.filter((j) => j.argv.some((a) => /nope\.txt|no\/such\/dir/.test(a))).length, 0, JSON.stringify(cps));
  assert.ok(cps.every((j) => j.state !== 'failed'));
  assert.ok((await stack.devices()).every((d) => d.state === 'free'));
});

test('bad rc cp arguments and requests get a clear error and copy nothing', async () => {
  writeFileSync(join(local, 'c.txt'), 'c');
  for (const [args, code, why] of [
    [['cp', join(local, 'c.txt')], 2, /takes a source and a destination/],
    [['cp', join(local, 'c.txt'), join(local, 'd.txt')], 2, /neither .* names a device/],
    [['cp', 'alpha:gpu0:/workspace/c.txt', 'alpha:gpu1:/workspace/c.txt'], 2, /between this machine and one device/],
    [['cp', local, 'alpha:gpu0:/workspace/'], 2, /is not a regular file/],
    [['cp', join(local, 'c.txt'), 'nosuch:gpu0:/workspace/'], 208, /no device is named nosuch:gpu0/],
    [['cp', 'alpha:gpu0:/workspace/', local], 2, /is the workspace itself/],
  ] as [string[], number, RegExp][]) {
    const r = await stack.cli(args);
    assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, why);
  }
  assert.equal(existsSync(join(local, 'd.txt')), false);
  const noPath = await stack.api('GET', '/api/devices/alpha:gpu0/files?submitter=x');
  assert.equal(noPath.status, 400);
  assert.match(JSON.stringify(noPath.body), /path is required/);
  const noSubmitter = await stack.api('PUT', '/api/devices/alpha:gpu0/files?path=/workspace/z.txt', 'z');
  assert.equal(noSubmitter.status, 400);
  assert.match(JSON.stringify(noSubmitter.body), /submitter is required/);
  assert.equal(existsSync(join(ws, 'z.txt')), false);
  assert.ok((await stack.devices()).every((d) => d.state === 'free'));
});
