// DockerRuntime against a real dockerd, with the busybox test image (no GPUs:
// every device here has no UUID, so no --gpus is passed).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { StartJob } from '../../protocol/worker';
import type { DeviceProblem, RunningJob } from '../../worker/runtime';
import { containerName } from '../../worker/docker-containers';
import { DockerRuntime } from '../../worker/docker-runtime';
import { JobMounts } from '../../worker/job-mounts';
import { ensureTestImage } from '../helpers/docker';
import { until } from '../helpers/until';

let image = '';
let workspace = '';
let scratch = '';
const hosts: string[] = [];
/** Each host's own scratch root, as each worker has one. */
const mounts = (host: string) => new JobMounts({ scratch: join(scratch, host), shared: null, secrets: null });

before(async () => {
  image = await ensureTestImage();
  workspace = mkdtempSync(join(tmpdir(), 'rc-docker-ws-'));
  scratch = mkdtempSync(join(tmpdir(), 'rc-docker-scratch-'));
});

after(() => {
  for (const host of hosts) {
    const ids = docker(['ps', '-aq', '--filter', `label=rc.host=${host}`])
      .stdout.split('\n')
      .filter(Boolean);
    if (ids.length > 0) docker(['rm', '-f', ...ids]);
  }
  rmSync(workspace, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

function docker(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('docker', args, { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function newHost(): string {
  const host = `t${randomBytes(4).toString('hex')}`;
  hosts.push(host);
  return host;
}

function runtime(host: string, opts: { image?: string; log?: string[]; signalFromHost?: boolean } = {}): DockerRuntime {
  return new DockerRuntime({
    host,
    image: opts.image ?? image,
    workspace,
    mounts: mounts(host),
    log: (m) => opts.log?.push(m),
    signalFromHost: opts.signalFromHost,
  });
}

const CPU0 = { index: 0, uuid: null };

/** A runtime for a fresh host, with its device 0 container made: the set-up most tests share. */
async function prepared(opts: Parameters<typeof runtime>[1] = {}): Promise<{ host: string; rt: DockerRuntime; name: string }> {
  const host = newHost();
  const rt = runtime(host, opts);
  assert.deepEqual(await rt.prepare([CPU0]), []);
  return { host, rt, name: containerName(host, 0) };
}
let jobSeq = 0;

function order(argv: string[], extra: Partial<StartJob> = {}): StartJob {
  return {
    jobId: `j${++jobSeq}-${randomBytes(3).toString('hex')}`,
    kind: 'run',
    fence: 1,
    argv,
    env: {},
    cwd: null,
    devices: [{ index: 0, name: 'cpu0', uuid: null }],
    maxRuntimeS: null,
    idleTimeoutS: null,
    ...extra,
  };
}

interface Ended {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  problems: DeviceProblem[];
  ms: number;
}

function start(rt: DockerRuntime, o: StartJob, onOutput?: (text: string) => void): { job: RunningJob; ended: Promise<Ended> } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const problems: DeviceProblem[] = [];
  const t0 = Date.now();
  let job!: RunningJob;
  const ended = new Promise<Ended>((resolve) => {
    job = rt.run(
      o,
      {
        output(stream, data) {
          (stream === 1 ? out : err).push(data);
          onOutput?.(data.toString());
        },
        exit(code, signal) {
          resolve({ code, signal, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString(), problems, ms: Date.now() - t0 });
        },
      },
      (p) => problems.push(p),
    );
  });
  return { job, ended };
}

const runToEnd = (rt: DockerRuntime, o: StartJob) => start(rt, o).ended;

/** Starts the job and resolves once its output has said `started`. */
async function startedJob(rt: DockerRuntime, o: StartJob): Promise<{ job: RunningJob; ended: Promise<Ended> }> {
  let seen = '';
  let resolveStarted!: () => void;
  const started = new Promise<void>((r) => {
    resolveStarted = r;
  });
  const run = start(rt, o, (t) => {
    seen += t;
    if (seen.includes('started')) resolveStarted();
  });
  await started;
  return run;
}

/** PIDs in the container whose environment has RC_JOB_ID=<id>. */
function tagged(container: string, jobId: string): string[] {
  const r = docker([
    'exec',
    container,
    'sh',
    '-c',
    `for d in /proc/[0-9]*; do tr '\\0' '\\n' 2>/dev/null <$d/environ | grep -qxF "RC_JOB_ID=${jobId}" && echo \${d#/proc/}; done; true`,
  ]);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter(Boolean);
}

function ps(container: string): string {
  return docker(['exec', container, 'ps']).stdout;
}

function containerId(name: string): string {
  return docker(['inspect', '-f', '{{.Id}}', name]).stdout.trim();
}

test('a job runs in the device container: exit code, env, working directory', async () => {
  const { host, rt, name } = await prepared();
  const labels = JSON.parse(docker(['inspect', '-f', '{{json .Config.Labels}}', name]).stdout) as Record<string, string>;
  assert.equal(labels['rc.host'], host);
  assert.equal(labels['rc.device'], '0');
  assert.match(labels['rc.spec'] ?? '', /^[0-9a-f]{12}$/);
  assert.deepEqual(rt.labels, [
    { key: 'runtime', value: 'docker' },
    { key: 'image', value: image },
  ]);

  const o = order(['sh', '-c', 'echo "$CUDA_VISIBLE_DEVICES|$CUDA_DEVICE_ORDER|$RC_JOB_ID|$RC_DEVICES|$(pwd)|$(id -u)"; echo oops >&2; exit 3']);
  const r = await runToEnd(rt, o);
  assert.equal(r.code, 3);
  assert.equal(r.stdout, `0|PCI_BUS_ID|${o.jobId}|cpu0|/workspace|0\n`);
  assert.equal(r.stderr, 'oops\n');

  const inTmp = await runToEnd(rt, order(['pwd'], { cwd: '/tmp' }));
  assert.equal(inTmp.code, 0);
  assert.equal(inTmp.stdout, '/tmp\n');

  const noDir = await runToEnd(rt, order(['pwd'], { cwd: '/no/such/dir' }));
  assert.equal(noDir.code, 126);
  assert.equal(noDir.stderr, `rc: the working directory /no/such/dir does not exist in the container ${name}\n`);

  // A job's own output that merely looks like docker's error is left as it is.
  const lookalike = await runToEnd(rt, order(['sh', '-c', 'echo "Error response from daemon: not really" >&2; echo fine']));
  assert.equal(lookalike.code, 0);
  assert.equal(lookalike.stderr, 'Error response from daemon: not really\n');
  assert.equal(lookalike.stdout, 'fine\n');

  const noCmd = await runToEnd(rt, order(['no-such-command']));
  assert.equal(noCmd.code, 127);
  assert.equal(noCmd.stderr, `rc: no-such-command: command not found in the container ${name}\n`);
});

test('what a job installs in the container stays for the next job', async () => {
  const { rt } = await prepared();
  const install = await runToEnd(
    rt,
    order([
      'sh',
      '-c',
      'mkdir -p /usr/local/bin && printf "#!/bin/sh\\necho hello from the tool\\n" > /usr/local/bin/rc-tool && chmod +x /usr/local/bin/rc-tool',
    ]),
  );
  assert.equal(install.code, 0, install.stderr);
  const use = await runToEnd(rt, order(['rc-tool']));
  assert.equal(use.code, 0, use.stderr);
  assert.equal(use.stdout, 'hello from the tool\n');
});

for (const fromHost of [true, false])
  test(`kill ends the whole process tree of the job inside the container (signalled ${fromHost ? "from the host's /proc" : 'through docker exec'})`, async () => {
    const { rt, name } = await prepared({ signalFromHost: fromHost });
    const o = order(['sh', '-c', 'sh -c "sleep 1001" & sleep 1002 & echo started; wait']);
    const { job, ended } = await startedJob(rt, o);
    assert.ok(tagged(name, o.jobId).length >= 3, ps(name));
    job.kill(5);
    const r = await ended;
    assert.equal(r.code, 143, 'docker exec passes on 128 + SIGTERM');
    assert.ok(r.ms < 5000, `ended after ${r.ms} ms`);
    assert.deepEqual(tagged(name, o.jobId), []);
    assert.doesNotMatch(ps(name), /sleep 100[12]/);
  });

/**
 * A job that leaves a process outside its tag, session and process group: a
 * double-forked, setsid'ed grandchild with an empty environment (no RC_JOB_ID).
 */
const ESCAPER = 'sh -c "env -i setsid sleep 1061 &"; (env -i setsid sh -c "sleep 1062 & wait" &); echo started';

/** What the next job on the device sees of other processes in its container: each line `pid args`, its own ps and shell left out. */
async function seenByNextJob(rt: DockerRuntime): Promise<string> {
  const r = await runToEnd(rt, order(['sh', '-c', 'ps -o pid,args | grep -v -e "ps -o" -e "grep -v" -e "sh -c ps"']));
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

for (const fromHost of [true, false]) {
  const how = fromHost ? "from the host's /proc" : 'through docker exec';
  test(`rc kill leaves nothing of the job in its container, not even a setsid'ed grandchild with a cleared environment (${how})`, async () => {
    const { rt, name } = await prepared({ signalFromHost: fromHost });
    const { job, ended } = await startedJob(rt, order(['sh', '-c', `${ESCAPER}; sleep 1063`]));
    await until(() => {
      const seen = ps(name);
      return /sleep 1061/.test(seen) && /sleep 1062/.test(seen) ? true : undefined;
    }, 'the grandchildren to run');
    job.kill(5);
    const r = await ended;
    assert.equal(r.code, 143);
    assert.doesNotMatch(ps(name), /sleep 106[123]/);
    assert.doesNotMatch(await seenByNextJob(rt), /sleep/);
  });

  test(`a job that exits leaves nothing in its container, not even a setsid'ed grandchild with a cleared environment (${how})`, async () => {
    const { rt, name } = await prepared({ signalFromHost: fromHost });
    const r = await runToEnd(rt, order(['sh', '-c', ESCAPER]));
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'started\n');
    assert.doesNotMatch(ps(name), /sleep 106[12]/);
    const next = await seenByNextJob(rt);
    assert.doesNotMatch(next, /sleep/);
    // The container's own init and keep-alive are all that is left besides the job.
    assert.match(next, /tail -f \/dev\/null/);
    assert.equal((await runToEnd(rt, order(['true']))).code, 0, 'the container still runs jobs');
  });
}

test('a job that ignores SIGTERM is killed after the grace period', async () => {
  const { rt, name } = await prepared();
  const o = order(['sh', '-c', 'trap "" TERM; sleep 1003 & echo started; wait; wait']);
  const { job, ended } = await startedJob(rt, o);
  const t0 = Date.now();
  job.kill(1);
  const r = await ended;
  assert.ok(Date.now() - t0 >= 900, 'not before the grace period');
  assert.equal(r.code, 137, '128 + SIGKILL');
  assert.deepEqual(tagged(name, o.jobId), []);
});

test('a finished job leaves no process behind, even one holding its stdout', async () => {
  const { rt, name } = await prepared();
  const o = order(['sh', '-c', 'sleep 1234 & echo started']);
  const r = await runToEnd(rt, o);
  assert.equal(r.code, 0);
  assert.equal(r.stdout, 'started\n');
  // docker exec itself waits a few seconds for the stdout holder, not for it to end.
  assert.ok(r.ms < 8000, `ended after ${r.ms} ms`);
  assert.deepEqual(tagged(name, o.jobId), []);
  assert.doesNotMatch(ps(name), /sleep 1234/);
});

test('a removed container is recreated before the next job', async () => {
  const log: string[] = [];
  const { host, rt } = await prepared({ log });
  const name = containerName(host, 0);
  const before = containerId(name);
  assert.equal((await runToEnd(rt, order(['sh', '-c', 'echo x > /opt-marker']))).code, 0);
  assert.equal(docker(['rm', '-f', name]).status, 0);
  const r = await runToEnd(rt, order(['sh', '-c', 'test -e /opt-marker && echo still there || echo gone']));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'gone\n');
  assert.notEqual(containerId(name), before);

  // A stopped one too.
  assert.equal(docker(['stop', '-t', '0', name]).status, 0);
  const again = await runToEnd(rt, order(['true']));
  assert.equal(again.code, 0, again.stderr);
  assert.ok(
    log.some((l) => l.includes('not running')),
    log.join('\n'),
  );
});

test('a new worker run kills leftover job processes before its hello (reclaim), then adopts its running containers', async () => {
  const { host, name } = await prepared();
  const id = containerId(name);
  // A job process of the previous worker run, still going.
  assert.equal(docker(['exec', '-d', '-e', 'RC_JOB_ID=old-job', name, 'sleep', '4321']).status, 0);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(tagged(name, 'old-job').length, 1);

  const log: string[] = [];
  const rt2 = runtime(host, { log });
  assert.deepEqual(await rt2.reclaim([{ jobId: 'old-job', devices: [0], cgroup: null }]), { killed: 1, jobs: 1, unkillable: [] });
  assert.deepEqual(tagged(name, 'old-job'), []);
  assert.ok(
    log.some((l) => l.includes(`killed 1 process(es) left over from earlier jobs in ${name}`)),
    log.join('\n'),
  );
  assert.deepEqual(await rt2.prepare([CPU0]), []);
  assert.equal(containerId(name), id, 'the same container');
  assert.ok(
    log.some((l) => l.includes('adopted')),
    log.join('\n'),
  );

  // Another spec (here: another workspace) means another container.
  const other = mkdtempSync(join(tmpdir(), 'rc-docker-ws2-'));
  try {
    const rt3 = new DockerRuntime({ host, image, workspace: other, mounts: mounts(host) });
    assert.deepEqual(await rt3.prepare([CPU0]), []);
    assert.notEqual(containerId(name), id);
  } finally {
    rmSync(other, { recursive: true, force: true });
  }
});

test('an image that is not there: a device problem, and the job ends with 125', async () => {
  const host = newHost();
  const missing = `rc-test-missing:${randomBytes(3).toString('hex')}`;
  const rt = runtime(host, { image: missing });
  const problems = await rt.prepare([CPU0]);
  assert.equal(problems.length, 1);
  assert.equal(problems[0]!.index, 0);
  assert.match(
    problems[0]!.reason,
    new RegExp(`cannot create the container ${containerName(host, 0)} from the image ${missing} \\(the image is not on this host and could not be pulled\\): `),
  );
  assert.doesNotMatch(problems[0]!.reason, /\n/);
  assert.equal(problems[0]!.evidence.image, missing);

  const r = await runToEnd(rt, order(['true']));
  assert.equal(r.code, 125);
  assert.equal(r.problems.length, 1);
  assert.match(r.stderr, /^rc: cannot run the job: cannot create the container .*\n$/);
});

test('a job on several devices runs in a one-off container', async () => {
  const host = newHost();
  const rt = runtime(host);
  const devices = [
    { index: 0, name: 'cpu0', uuid: null },
    { index: 1, name: 'cpu1', uuid: null },
  ];
  const o = order(['sh', '-c', 'echo "$CUDA_VISIBLE_DEVICES|$RC_DEVICES|$(pwd)"; exit 4'], { devices, cwd: '/tmp' });
  const r = await runToEnd(rt, o);
  assert.equal(r.code, 4, r.stderr);
  assert.equal(r.stdout, '0,1|cpu0,cpu1|/tmp\n');

  const k = order(['sh', '-c', 'echo started; sleep 1005'], { devices });
  const { job, ended } = await startedJob(rt, k);
  job.kill(2);
  const killed = await ended;
  assert.notEqual(killed.code, 0);
  assert.equal(docker(['ps', '-aq', '--filter', `label=rc.host=${host}`, '--filter', 'label=rc.job']).stdout.trim(), '');
});

test('jobs in a container that is up run without a docker inspect each; a restarted container is noticed', async () => {
  const host = newHost();
  const dir = mkdtempSync(join(tmpdir(), 'rc-docker-calls-'));
  const calls = join(dir, 'calls');
  const wrapper = join(dir, 'docker');
  // Logs each docker command's first argument, then runs the real docker.
  writeFileSync(wrapper, `#!/bin/sh\necho "$1" >> ${calls}\nexec docker "$@"\n`, { mode: 0o755 });
  try {
    const rt = new DockerRuntime({ host, image, workspace, mounts: mounts(host), docker: wrapper });
    assert.deepEqual(await rt.prepare([CPU0]), []);
    writeFileSync(calls, '');
    for (let i = 0; i < 3; i++) assert.equal((await runToEnd(rt, order(['true']))).code, 0);
    const used = readFileSync(calls, 'utf8').split('\n').filter(Boolean);
    assert.deepEqual(
      used.filter((c) => c === 'inspect'),
      [],
      used.join(' '),
    );
    assert.equal(used.filter((c) => c === 'exec').length, 3, 'one docker exec per job, and signals from the host /proc');

    // Restarted: a new init. The next job finds it out, runs, and can still be killed.
    const name = containerName(host, 0);
    assert.equal(docker(['restart', '-t', '0', name]).status, 0);
    assert.equal((await runToEnd(rt, order(['true']))).code, 0);
    writeFileSync(calls, '');
    const o = order(['sh', '-c', 'sleep 1234 & echo started; wait']);
    const { job, ended } = await startedJob(rt, o);
    job.kill(5);
    const r = await ended;
    assert.equal(r.code, 143, 'TERM reached it');
    assert.deepEqual(tagged(name, o.jobId), []);
    assert.doesNotMatch(ps(name), /sleep 1234/);
    assert.deepEqual(readFileSync(calls, 'utf8').split('\n').filter(Boolean), ['exec'], 'the kill went through the host /proc of the new container');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
