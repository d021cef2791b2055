// The Docker runtime through the whole stack: rc run → controller → a worker
// with RC_RUNTIME=docker → docker exec in the device's container, on a real dockerd.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ensureTestImage } from '../helpers/docker';
import { Stack } from '../helpers/stack';

let stack: Stack;
let image = '';
const host = `dk${process.pid}`;
const docker = (...args: string[]) => spawnSync('docker', args, { encoding: 'utf8' });
const removeContainers = (h: string) => {
  const ids = docker('ps', '-aq', '--filter', `label=rc.host=${h}`).stdout.split('\n').filter(Boolean);
  if (ids.length) docker('rm', '-f', ...ids);
};

before(async () => {
  image = await ensureTestImage();
  stack = await Stack.start({ workers: [] });
  await stack.startWorker(host, 2, { RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: image });
});
after(async () => {
  await stack.stop();
  removeContainers(host);
  removeContainers(`${host}bad`);
});

test('a job runs in its device container: exit code, stdout and stderr, CUDA_VISIBLE_DEVICES, working directory, root', async () => {
  const r = await stack.cli(['run', '-d', `${host}:gpu1`, '--', 'sh', '-c', 'echo "$CUDA_VISIBLE_DEVICES $RC_DEVICES $(pwd) $(id -u)"; echo err >&2; exit 7']);
  assert.equal(r.code, 7, r.stderr);
  assert.equal(r.stdout, `1 ${host}:gpu1 /workspace 0\n`);
  assert.equal(r.stderr, 'err\n');
  assert.equal(docker('inspect', '-f', '{{.State.Running}}', `rc-${host}-gpu1`).stdout.trim(), 'true');
  const cwd = await stack.cli(['run', '-d', `${host}:gpu1`, '--cwd', '/tmp', '--', 'pwd']);
  assert.equal(cwd.stdout, '/tmp\n');
  const missing = await stack.cli(['run', '-d', `${host}:gpu1`, '--cwd', '/no/such/dir', '--', 'pwd']);
  assert.equal(missing.code, 126);
  assert.match(missing.stderr, /working directory \/no\/such\/dir does not exist in the container/);
});

test('a piped stdin reaches the job in its container (docker exec -i), its end the job’s end of file; a file too', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-docker-stdin-'));
  const file = join(dir, 'in.txt');
  writeFileSync(file, 'one\ntwo\nthree\n');
  const r = await stack.cli(['run', '-d', `${host}:gpu1`, '--', 'wc', '-l'], { stdinFile: file });
  assert.deepEqual([r.code, r.stdout.trim(), r.stderr], [0, '3', '']);
  // Without a pipe or a file (here /dev/null) it reads nothing and ends at once, as before.
  const none = await stack.cli(['run', '-d', `${host}:gpu1`, '--', 'sh', '-c', 'cat; echo end']);
  assert.deepEqual([none.code, none.stdout], [0, 'end\n']);
});

test('rc run --env reaches the job in its container, under what rc sets itself', async () => {
  const r = await stack.cli(
    ['run', '-d', `${host}:gpu0`, '--env', 'MSG=hello from env', '--env', 'FROM_ME', '--', 'sh', '-c', 'echo "$MSG|$FROM_ME|$RC_DEVICES"'],
    {
      env: { FROM_ME: 'caller' },
    },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `hello from env|caller|${host}:gpu0\n`);
});

/** Every process on this host whose command line holds `text` (pid and command line). */
function cmdlinesWith(text: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    if (cmdline.includes(text)) found.push(`${pid}: ${cmdline.replace(/\0/g, ' ')}`);
  }
  return found;
}

test('an --env value is on no command line on the host while the job runs (docker exec and a one-off docker run); the job sees it', async () => {
  for (const args of [
    ['-d', `${host}:gpu0`],
    ['--gpus', '2'],
  ]) {
    const secret = `s3cr3t-${randomBytes(12).toString('hex')}`;
    let out = '';
    // --env SECRET_X takes the value from rc's own environment: the test's rc client has it on no command line either.
    const job = stack.cli(['run', ...args, '--env', 'SECRET_X', '--', 'sh', '-c', 'echo "seen=$SECRET_X"; sleep 3'], {
      env: { SECRET_X: secret },
      onSpawn: (c) =>
        c.stdout!.on('data', (b: Buffer) => {
          out += b.toString();
        }),
    });
    await stack.waitFor(() => out.includes('seen='), `the job (${args.join(' ')}) to start`, 30_000);
    assert.equal(out, `seen=${secret}\n`);
    assert.deepEqual(cmdlinesWith(secret), [], `${args.join(' ')}: the value is on a command line`);
    const r = await job;
    assert.equal(r.code, 0, r.stderr);
  }
});

test('the runtime and the image are host labels', async () => {
  const d = await stack.cli(['describe', `${host}:gpu0`]);
  assert.match(d.stdout, /runtime +docker +detected \(host\)/);
  assert.match(d.stdout, new RegExp(`image +${image.replace(/[.:]/g, '\\$&')} +detected \\(host\\)`));
  assert.equal((await stack.cli(['devices', '--select', 'runtime=docker', '--json'])).code, 0);
});

test('an install stays for the next job in the same container; the shared workspace persists', async () => {
  const a = await stack.cli([
    'run',
    '-d',
    `${host}:gpu0`,
    '--',
    'sh',
    '-c',
    'mkdir -p /opt/tools && printf "#!/bin/sh\\necho tool ok\\n" > /opt/tools/mytool && chmod +x /opt/tools/mytool && echo dep > /workspace/dep.txt',
  ]);
  assert.equal(a.code, 0, a.stderr);
  const b = await stack.cli(['run', '-d', `${host}:gpu0`, '--', 'sh', '-c', '/opt/tools/mytool; cat /workspace/dep.txt']);
  assert.equal(b.stdout, 'tool ok\ndep\n');
});

test('rc kill ends the whole process tree inside the container, grandchildren included', async () => {
  let out = '';
  const job = stack.cli(['run', '-d', `${host}:gpu0`, '--', 'sh', '-c', 'sh -c "sleep 4721" & sleep 4722 & echo started; wait'], {
    onSpawn: (c) =>
      c.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
      }),
  });
  await stack.waitFor(() => out.includes('started'), 'the job to start');
  const inside = () => docker('exec', `rc-${host}-gpu0`, 'ps').stdout;
  assert.match(inside(), /sleep 4721/);
  const jobId = (await stack.devices()).find((d) => d.name === `${host}:gpu0`)!.holder!.jobId;
  assert.equal((await stack.cli(['kill', jobId])).code, 0);
  const r = await job;
  assert.equal((await stack.job(jobId)).state, 'killed');
  assert.notEqual(r.code, 0);
  assert.doesNotMatch(inside(), /sleep 472[12]/, 'no process of the killed job survives in the container');
});

test("rc kill and a job's own exit leave nothing in its container, a setsid'ed double fork with a cleared environment included: the next job on the device sees none", async () => {
  // Neither carries RC_JOB_ID, nor stays in the job's session or under its shell.
  const escaper = 'sh -c "env -i setsid sleep 4741 &"; (env -i setsid sh -c "sleep 4742 & wait" &)';
  const inside = () => docker('exec', `rc-${host}-gpu0`, 'ps').stdout;
  const nextJobSees = async () => {
    const r = await stack.cli(['run', '-d', `${host}:gpu0`, '--', 'ps', '-o', 'args']);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  };
  let out = '';
  const job = stack.cli(['run', '-d', `${host}:gpu0`, '--', 'sh', '-c', `${escaper}; echo started; sleep 4743`], {
    onSpawn: (c) =>
      c.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
      }),
  });
  await stack.waitFor(() => out.includes('started') && /sleep 4742/.test(inside()), 'the job and its grandchildren to start', 30_000);
  const jobId = (await stack.devices()).find((d) => d.name === `${host}:gpu0`)!.holder!.jobId;
  assert.equal((await stack.cli(['kill', jobId])).code, 0);
  await job;
  assert.equal((await stack.job(jobId)).state, 'killed');
  assert.doesNotMatch(inside(), /sleep 474[123]/, 'no process of the killed job survives in the container');
  assert.doesNotMatch(await nextJobSees(), /sleep 474/);

  const exits = await stack.cli(['run', '-d', `${host}:gpu0`, '--', 'sh', '-c', `${escaper}; echo started`]);
  assert.deepEqual([exits.code, exits.stdout], [0, 'started\n'], exits.stderr);
  assert.doesNotMatch(inside(), /sleep 474[12]/, 'no process of the finished job survives in the container');
  assert.doesNotMatch(await nextJobSees(), /sleep 474/);
});

test('a dead container is recreated before the next job (and what was installed in it is gone)', async () => {
  docker('rm', '-f', `rc-${host}-gpu0`);
  const r = await stack.cli(['run', '-d', `${host}:gpu0`, '--', 'sh', '-c', '[ -x /opt/tools/mytool ] || echo no tool; cat /workspace/dep.txt']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'no tool\ndep\n');
});

test('after a restart the worker adopts its containers instead of making new ones', async () => {
  const id = () => docker('inspect', '-f', '{{.Id}}', `rc-${host}-gpu1`).stdout.trim();
  const before = id();
  assert.ok(before);
  await stack.stopWorker(host);
  await stack.startWorker(host, 2, { RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: image });
  const r = await stack.cli(['run', '-d', `${host}:gpu1`, '--', 'echo', 'again']);
  assert.equal(r.stdout, 'again\n');
  assert.equal(id(), before);
});

test('a worker killed with SIGKILL leaves its jobs running in their containers; the next one kills them, and removes its one-off containers, before it says hello', async () => {
  const inside = () => docker('exec', `rc-${host}-gpu0`, 'ps').stdout;
  const oneOffs = () => docker('ps', '-aq', '--filter', `label=rc.host=${host}`, '--filter', 'label=rc.job').stdout.trim();
  for (const args of [
    ['-d', `${host}:gpu0`],
    ['--gpus', '2'],
  ]) {
    let out = '';
    const job = stack.cli(['run', ...args, '--', 'sh', '-c', 'setsid sleep 4731 & sleep 4732 & echo started; wait'], {
      timeoutMs: 60_000,
      onSpawn: (c) =>
        c.stdout!.on('data', (b: Buffer) => {
          out += b.toString();
        }),
    });
    await stack.waitFor(() => out.includes('started'), 'the job to start');
    await stack.stopWorker(host, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 300));
    const oneOff = args[0] === '--gpus';
    if (oneOff) assert.notEqual(oneOffs(), '', 'the one-off container runs on');
    else assert.match(inside(), /sleep 4731/, 'the orphans run on in the container');
    let log = '';
    const starting = stack.startWorker(host, 2, { RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: image });
    stack.workers.get(host)!.stdout!.on('data', (d: Buffer) => {
      log += d.toString();
    });
    await starting;
    await stack.waitFor(() => /connected to /.test(log), 'the restarted worker to say hello', 30_000);
    if (oneOff) assert.equal(oneOffs(), '', log);
    else assert.doesNotMatch(inside(), /sleep 473[12]/, log);
    assert.match(log, /left by the previous run in \d+ ms/);
    assert.equal((await job).code, 205);
  }
});

test('a container that cannot be created quarantines its device, with docker’s error as evidence', async () => {
  await stack.startWorker(`${host}bad`, 1, { RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: 'rc-test:no-such-image' });
  await stack.waitFor(
    async () => (await stack.devices()).find((d) => d.name === `${host}bad:gpu0`)?.state === 'unhealthy',
    'the device to be quarantined',
    30_000,
  );
  const d = ((await stack.api('GET', `/api/devices/${host}bad:gpu0`)).body as { device: { unhealthy: { reason: string; evidence: { container: string } } } })
    .device;
  assert.match(d.unhealthy.reason, /cannot create the container rc-\w+-gpu0 from the image rc-test:no-such-image/);
  assert.equal(d.unhealthy.evidence.container, `rc-${host}bad-gpu0`);
  const r = await stack.cli(['run', '-d', `${host}bad:gpu0`, '--', 'true']);
  assert.equal(r.code, 213);
});
