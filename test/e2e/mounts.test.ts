// Every job's /scratch (its own, wiped when it ends: exit, rc kill,
// --max-runtime, a worker killed mid-job), /shared (kept across jobs) and
// /secrets (read-only), in both runtimes, through the whole stack: rc run →
// controller → a real worker → a real process or a real container. And the
// worker's checks of RC_SCRATCH_DIR, RC_SHARED_DIR and RC_SECRETS_DIR.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ensureTestImage } from '../helpers/docker';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
let stack: Stack;
const base = mkdtempSync(join(tmpdir(), 'rc-mounts-'));
const shared = join(base, 'shared');
const secrets = join(base, 'secrets');
const scratchOf = (host: string) => join(base, `scratch-${host}`);
const HOST = 'mh';
const PLAIN = 'mp';
const DOCKER = `md${process.pid}`;
const mountEnv = (host: string): Record<string, string> => ({ RC_SCRATCH_DIR: scratchOf(host), RC_SHARED_DIR: shared, RC_SECRETS_DIR: secrets });
const docker = (...args: string[]) => spawnSync('docker', args, { encoding: 'utf8' });

before(async () => {
  mkdirSync(shared);
  mkdirSync(join(secrets, 'sub'), { recursive: true });
  writeFileSync(join(secrets, 'token'), 's3cret\n', { mode: 0o600 });
  writeFileSync(join(secrets, 'sub', 'cfg'), 'key=1\n');
  await ensureTestImage();
  stack = await Stack.start({ hostTimeoutS: 5, workers: [] });
  await stack.startWorker(HOST, 2, mountEnv(HOST));
  await stack.startWorker(PLAIN, 1);
  await stack.startWorker(DOCKER, 2, { ...mountEnv(DOCKER), RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: 'rc-test:busybox' });
});
after(async () => {
  // The unwipable-scratch test's file, should it have failed before undoing it.
  spawnSync('chattr', ['-R', '-i', base], { stdio: 'ignore' });
  await stack.stop();
  const ids = docker('ps', '-aq', '--filter', `label=rc.host=${DOCKER}`).stdout.split('\n').filter(Boolean);
  if (ids.length) docker('rm', '-f', ...ids);
  rmSync(base, { recursive: true, force: true });
});

const run = (device: string, script: string, extra: string[] = []) => stack.cli(['run', '-d', device, ...extra, '--', 'sh', '-c', script]);

/** Starts `script` on `device` and resolves once it printed `ready` (with what it printed), and the job's end. */
async function started(device: string, script: string, extra: string[] = []): Promise<{ out: () => string; done: ReturnType<Stack['cli']> }> {
  let out = '';
  const done = stack.cli(['run', '-d', device, ...extra, '--', 'sh', '-c', script], {
    onSpawn: (c) =>
      c.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
      }),
  });
  await stack.waitFor(() => out.includes('ready'), `the job on ${device} to start`, 30_000);
  return { out: () => out, done };
}

// ---- the host runtime ---------------------------------------------------

test("host runtime: RC_WORKSPACE, RC_SCRATCH, RC_SHARED and RC_SECRETS name the job's folders; its scratch is empty and gone when it ends", async () => {
  const r = await run(
    `${HOST}:gpu0`,
    'echo "$RC_WORKSPACE|$RC_SCRATCH|$RC_SHARED|$(ls -A "$RC_SCRATCH" | wc -l)|$RC_SECRETS"; echo data > "$RC_SCRATCH/f"; cat "$RC_SECRETS/token"',
  );
  assert.equal(r.code, 0, r.stderr);
  const [ws, scratch, sh, count, secrets] = r.stdout.split('\n')[0]!.split('|');
  // Its copy of the secrets went before its end was reported: rc run has returned, so it is gone now.
  assert.equal(existsSync(secrets!), false, `${secrets} is still there`);
  assert.equal(ws, join(stack.dataDir, `ws-${HOST}`));
  assert.equal(sh, shared);
  assert.equal(count!.trim(), '0');
  assert.ok(scratch!.startsWith(`${scratchOf(HOST)}/jobs/`), scratch);
  assert.equal(r.stdout.split('\n')[1], 's3cret');
  // Wiped right after the end was reported (off the job's path: no other job sees the folder).
  await stack.waitFor(() => !existsSync(scratch!), `${scratch} to be wiped`);
  assert.deepEqual(readdirSync(join(scratchOf(HOST), 'jobs')), []);
});

test('host runtime: two jobs at once have scratch folders of their own', async () => {
  const a = await started(`${HOST}:gpu0`, 'echo a > "$RC_SCRATCH/mine"; echo "ready $RC_SCRATCH"; sleep 2; ls "$RC_SCRATCH"');
  const b = await started(`${HOST}:gpu1`, 'echo b > "$RC_SCRATCH/theirs"; echo "ready $RC_SCRATCH"; sleep 2; ls "$RC_SCRATCH"');
  const [ra, rb] = await Promise.all([a.done, b.done]);
  assert.equal(ra.code, 0, ra.stderr);
  assert.equal(rb.code, 0, rb.stderr);
  const dirA = /ready (\S+)/.exec(ra.stdout)![1]!;
  const dirB = /ready (\S+)/.exec(rb.stdout)![1]!;
  assert.notEqual(dirA, dirB);
  assert.match(ra.stdout, /\nmine\n$/);
  assert.match(rb.stdout, /\ntheirs\n$/);
  await stack.waitFor(() => !existsSync(dirA) && !existsSync(dirB), 'both scratch folders to be wiped');
});

test('host runtime: a job killed by rc kill, and one stopped by --max-runtime, leave no scratch', async () => {
  const killed = await started(`${HOST}:gpu0`, 'echo x > "$RC_SCRATCH/f"; echo "ready $RC_SCRATCH $RC_JOB_ID"; sleep 300');
  const [, dir = '', id = ''] = /ready (\S+) (\S+)/.exec(killed.out())!;
  assert.ok(existsSync(join(dir, 'f')));
  assert.equal((await stack.cli(['kill', id])).code, 0);
  const k = await killed.done;
  assert.notEqual(k.code, 0);
  await stack.waitFor(() => !existsSync(dir), 'the killed job’s scratch to be wiped');

  const timed = await run(`${HOST}:gpu1`, 'echo "dir $RC_SCRATCH"; echo x > "$RC_SCRATCH/f"; sleep 300', ['--max-runtime', '2s']);
  assert.notEqual(timed.code, 0);
  const tdir = /dir (\S+)/.exec(timed.stdout)![1]!;
  await stack.waitFor(() => !existsSync(tdir), 'the timed-out job’s scratch to be wiped');
});

test('host runtime: the secrets are a read-only copy (files 0444, folders 0555) and a job changing its copy changes nothing else', async () => {
  const r = await run(
    `${HOST}:gpu0`,
    'stat -c "%a %n" "$RC_SECRETS" "$RC_SECRETS/token" "$RC_SECRETS/sub" "$RC_SECRETS/sub/cfg"; chmod u+w "$RC_SECRETS/token"; echo changed > "$RC_SECRETS/token"; echo "dir $RC_SECRETS"',
  );
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  const dir = lines[4]!.slice(4);
  assert.deepEqual(lines.slice(0, 4), [`555 ${dir}`, `444 ${dir}/token`, `555 ${dir}/sub`, `444 ${dir}/sub/cfg`]);
  assert.notEqual(dir, secrets);
  assert.equal(readFileSync(join(secrets, 'token'), 'utf8'), 's3cret\n', "the operator's file changed");
  assert.equal(existsSync(dir), false, 'the copy is not gone with the job');
  // Not root, a plain write (no chmod first) fails.
  if (process.getuid?.() !== 0) {
    const w = await run(`${HOST}:gpu0`, 'echo x > "$RC_SECRETS/token"');
    assert.notEqual(w.code, 0);
  }
});

test('host runtime: what one job writes to /shared a later job reads', async () => {
  const w = await run(`${HOST}:gpu0`, 'echo kept > "$RC_SHARED/from-host-job"');
  assert.equal(w.code, 0, w.stderr);
  const r = await run(`${HOST}:gpu1`, 'cat "$RC_SHARED/from-host-job"');
  assert.equal(r.stdout, 'kept\n');
});

test('without RC_SHARED_DIR and RC_SECRETS_DIR a job has RC_SCRATCH and no RC_SHARED or RC_SECRETS', async () => {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: sh's ${VAR-word}, not a template
  const r = await run(`${PLAIN}:gpu0`, 'echo "${RC_SHARED-unset}|${RC_SECRETS-unset}|${RC_SCRATCH:+set}"');
  assert.equal(r.stdout, 'unset|unset|set\n');
});

test('rc run --env cannot set RC_SCRATCH, RC_SHARED, RC_SECRETS or RC_WORKSPACE', async () => {
  for (const name of ['RC_SCRATCH', 'RC_SHARED', 'RC_SECRETS', 'RC_WORKSPACE']) {
    const r = await stack.cli(['run', '-d', `${HOST}:gpu0`, '--env', `${name}=/tmp`, '--', 'true']);
    assert.notEqual(r.code, 0, name);
    assert.match(r.stderr, new RegExp(`reserved_env: --env ${name}: ${name} is set by rc itself`));
  }
});

test('a worker killed mid-job: the next one wipes the scratch the job left before it says hello', async () => {
  const job = await started(`${HOST}:gpu0`, 'echo x > "$RC_SCRATCH/left"; echo "ready $RC_SCRATCH"; exec sleep 300');
  const dir = /ready (\S+)/.exec(job.out())![1]!;
  await stack.stopWorker(HOST, 'SIGKILL');
  assert.ok(existsSync(join(dir, 'left')), 'the scratch should still be there while no worker runs');
  await stack.startWorker(HOST, 2, mountEnv(HOST));
  // The host's devices read busy while it is only away: wait for the new worker's hello itself.
  await stack.waitFor(() => /connected to .* as /.test(stack.workerLogs.get(HOST) ?? ''), 'the restarted worker to say hello');
  assert.equal(existsSync(dir), false, "the restarted worker left the scratch of the killed one's job");
  const r = await job.done;
  assert.notEqual(r.code, 0);
});

// ---- the Docker runtime -------------------------------------------------

test('docker runtime: /scratch, /shared and /secrets are mounts, named in RC_SCRATCH, RC_SHARED, RC_SECRETS and RC_WORKSPACE', async () => {
  const r = await run(
    `${DOCKER}:gpu0`,
    'echo "$RC_WORKSPACE|$RC_SCRATCH|$RC_SHARED|$RC_SECRETS"; grep -E " /(scratch|shared|secrets) " /proc/mounts | cut -d" " -f2,4 | cut -d, -f1 | sort',
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '/workspace|/scratch|/shared|/secrets\n/scratch rw\n/secrets ro\n/shared rw\n');
});

test('docker runtime: a write to /secrets fails (a read-only mount), the files read', async () => {
  const r = await run(`${DOCKER}:gpu0`, 'cat /secrets/token /secrets/sub/cfg; echo x > /secrets/token && echo WROTE; touch /secrets/new && echo WROTE; true');
  assert.equal(r.stdout, 's3cret\nkey=1\n');
  assert.match(r.stderr, /Read-only file system/);
  assert.equal(readFileSync(join(secrets, 'token'), 'utf8'), 's3cret\n');
});

test('docker runtime: the next job on the device finds /scratch empty; two jobs at once have their own', async () => {
  const w = await run(`${DOCKER}:gpu0`, 'echo a > /scratch/a; mkdir -p /scratch/d/e; touch /scratch/.hidden; ls -A /scratch');
  assert.equal(w.stdout, '.hidden\na\nd\n');
  assert.deepEqual(readdirSync(join(scratchOf(DOCKER), 'gpu0')), [], 'wiped on the host before the end was reported');
  const next = await run(`${DOCKER}:gpu0`, 'ls -A /scratch | wc -l');
  assert.equal(next.stdout.trim(), '0');

  const a = await started(`${DOCKER}:gpu0`, 'echo a > /scratch/mine; echo ready; sleep 2; ls /scratch');
  const b = await started(`${DOCKER}:gpu1`, 'echo b > /scratch/theirs; echo ready; sleep 2; ls /scratch');
  const [ra, rb] = await Promise.all([a.done, b.done]);
  assert.equal(ra.stdout, 'ready\nmine\n');
  assert.equal(rb.stdout, 'ready\ntheirs\n');
});

test("docker runtime: a killed job's /scratch is wiped too", async () => {
  const job = await started(`${DOCKER}:gpu1`, 'echo x > /scratch/k; echo "ready $RC_JOB_ID"; exec sleep 300');
  assert.deepEqual(readdirSync(join(scratchOf(DOCKER), 'gpu1')), ['k']);
  assert.equal((await stack.cli(['kill', /ready (\S+)/.exec(job.out())![1]!])).code, 0);
  await job.done;
  assert.deepEqual(readdirSync(join(scratchOf(DOCKER), 'gpu1')), []);
});

test('docker runtime: a job on two GPUs (a one-off container) gets the mounts, and its scratch goes with it', async () => {
  const r = await stack.cli([
    'run',
    '--select',
    'runtime=docker',
    '--gpus',
    '2',
    '--',
    'sh',
    '-c',
    'echo x > /scratch/f; ls /scratch; cat /secrets/token; echo one-off > /shared/from-one-off',
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'f\ns3cret\n');
  assert.deepEqual(readdirSync(join(scratchOf(DOCKER), 'jobs')), []);
  // /shared is kept across jobs and runtimes: the same folder.
  const later = await run(`${DOCKER}:gpu0`, 'cat /shared/from-one-off');
  assert.equal(later.stdout, 'one-off\n');
});

test("docker runtime: a worker killed mid-job: the next one empties the device's /scratch before it says hello", async () => {
  const job = await started(`${DOCKER}:gpu0`, 'echo x > /scratch/left; echo ready; exec sleep 300');
  await stack.stopWorker(DOCKER, 'SIGKILL');
  assert.deepEqual(readdirSync(join(scratchOf(DOCKER), 'gpu0')), ['left']);
  await stack.startWorker(DOCKER, 2, { ...mountEnv(DOCKER), RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: 'rc-test:busybox' });
  // The host's devices read busy while it is only away: wait for the new worker's hello itself.
  await stack.waitFor(() => /connected to .* as /.test(stack.workerLogs.get(DOCKER) ?? ''), 'the restarted worker to say hello');
  assert.deepEqual(readdirSync(join(scratchOf(DOCKER), 'gpu0')), []);
  assert.notEqual((await job.done).code, 0);
  const next = await run(`${DOCKER}:gpu0`, 'ls -A /scratch | wc -l');
  assert.equal(next.stdout.trim(), '0');
});

// Last on this host's gpu1: it leaves the device quarantined.
test('docker runtime: a /scratch that cannot be wiped (an immutable file) quarantines the device, so no next job sees it', async (t) => {
  const dir = join(scratchOf(DOCKER), 'gpu1');
  const job = await started(`${DOCKER}:gpu1`, 'echo x > /scratch/stuck; echo ready; sleep 1');
  const chattr = spawnSync('chattr', ['+i', join(dir, 'stuck')], { encoding: 'utf8' });
  if (chattr.status !== 0) return t.skip(`chattr +i does not work here: ${chattr.stderr.trim()}`);
  try {
    assert.equal((await job.done).code, 0);
    await stack.waitFor(async () => (await stack.cli(['describe', `${DOCKER}:gpu1`])).stdout.includes('QUARANTINED'), 'the device to be quarantined');
    const d = await stack.cli(['describe', `${DOCKER}:gpu1`]);
    assert.match(d.stdout, /QUARANTINED for .*: the scratch of job \S+ \(.*gpu1\) could not be wiped: .*stuck: permission denied/);
    const refused = await stack.cli(['run', '-d', `${DOCKER}:gpu1`, '--no-wait', '--', 'ls', '/scratch']);
    assert.notEqual(refused.code, 0);
    assert.doesNotMatch(refused.stdout, /stuck/);
  } finally {
    spawnSync('chattr', ['-i', join(dir, 'stuck')]);
  }
});

// ---- the worker's checks ------------------------------------------------

/** The worker binary with this environment: it must stop at its checks, before it dials anywhere. */
function workerStart(env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'worker.js'), ...args], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      RC_CONTROLLER: 'http://127.0.0.1:9',
      RC_HOST_TOKEN: 'not-a-real-credential',
      RC_HOST_NAME: 'checks',
      RC_WORKSPACE: join(base, 'ws-checks'),
      RC_STATE_DIR: join(base, 'state-checks'),
      ...env,
    } as unknown as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    out += c.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    }),
  );
}

test('the worker refuses unusable RC_SCRATCH_DIR, RC_SHARED_DIR and RC_SECRETS_DIR with a sentence, exit 2 and no stack trace', async () => {
  const aFile = join(base, 'a-file');
  writeFileSync(aFile, 'x');
  const fifoDir = join(base, 'secrets-fifo');
  mkdirSync(fifoDir);
  spawnSync('mkfifo', [join(fifoDir, 'pipe')]);
  const cases: [Record<string, string>, RegExp][] = [
    [{ RC_SHARED_DIR: 'relative/shared' }, /RC_SHARED_DIR must be an absolute path, e\.g\. \/srv\/rc\/shared/],
    [{ RC_SECRETS_DIR: 'secrets' }, /RC_SECRETS_DIR must be an absolute path/],
    [{ RC_SCRATCH_DIR: './s' }, /RC_SCRATCH_DIR must be an absolute path/],
    [
      { RC_SHARED_DIR: join(base, 'nope') },
      /RC_SHARED_DIR \(.*nope\) cannot be used: no such folder; mount the host's shared storage there, or unset RC_SHARED_DIR/,
    ],
    [{ RC_SHARED_DIR: aFile }, /RC_SHARED_DIR \(.*a-file\) is not a folder/],
    [{ RC_SECRETS_DIR: join(base, 'nope') }, /RC_SECRETS_DIR \(.*nope\) cannot be used: no such folder/],
    [{ RC_SECRETS_DIR: fifoDir }, /RC_SECRETS_DIR \(.*\) holds .*pipe, which is neither a file nor a folder/],
    [{ RC_SCRATCH_DIR: aFile }, /RC_SCRATCH_DIR \(.*a-file\) cannot be used: .*jobs' scratch folders are made there/],
    [{ RC_SCRATCH_DIR: join(base, 'ws-checks', 'scratch') }, /RC_WORKSPACE \(.*\) and RC_SCRATCH_DIR \(.*\) overlap; give each a folder of its own/],
    [{ RC_SCRATCH_DIR: '/' }, /overlap/],
    [{ RC_SHARED_DIR: secrets, RC_SECRETS_DIR: secrets }, /RC_SHARED_DIR \(.*\) and RC_SECRETS_DIR \(.*\) overlap/],
  ];
  for (const [env, message] of cases) {
    const r = await workerStart(env);
    assert.equal(r.code, 2, `${JSON.stringify(env)}: ${r.out}`);
    assert.match(r.out, message, JSON.stringify(env));
    assert.doesNotMatch(r.out, /\n\s+at /, 'a stack trace');
  }
});

test('rc-worker doctor: a mounts row, ok with usable folders and fail with the reason', async () => {
  const good = await workerStart({ RC_SHARED_DIR: shared, RC_SECRETS_DIR: secrets }, ['doctor']);
  assert.match(good.out, /\nmounts\s+ok\s+scratch in .*state-checks\/scratch; shared .*shared; secrets .*secrets\n/);
  const bad = await workerStart({ RC_SECRETS_DIR: join(base, 'nope') }, ['doctor']);
  assert.equal(bad.code, 1);
  assert.match(bad.out, /\nmounts\s+fail\s+RC_SECRETS_DIR \(.*nope\) cannot be used: no such folder/);
  assert.ok(statSync(secrets).isDirectory());
});
