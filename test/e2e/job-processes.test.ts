// A job's processes never outlive it on the host runtime: whatever it started,
// a grandchild that called setsid or a double fork included, is gone when the
// job ends (rc kill, --max-runtime, its own exit), before the end is reported;
// a worker killed with SIGKILL leaves orphans, and the next worker on the same
// state kills them before it says hello. Two workers on this machine: alpha
// with a cgroup per job (where the host offers cgroup v2), beta on the
// fallback (RC_CGROUPS=0: the RC_JOB_ID tag, the process group and the session).
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { CgroupFolder } from '../../worker/job-cgroup';
import { processesMatching, Stack } from '../helpers/stack';

let stack: Stack;
const HOST_TIMEOUT_S = 5;
// Whether this host lets a worker make job cgroups (cgroup v2, writable): else alpha is on the fallback too, and its tests are skipped.
const probeDir = mkdtempSync(join(tmpdir(), 'rc-cgroup-probe-'));
const probe = CgroupFolder.open('probe', probeDir);
if (probe instanceof CgroupFolder) probe.removeEmpty();
const noCgroups = probe instanceof CgroupFolder ? false : `no job cgroups on this host: ${probe.why}`;
rmSync(probeDir, { recursive: true, force: true });
const MODES = [
  { mode: 'cgroup', host: 'alpha', other: 'beta', env: {} as Record<string, string>, skip: noCgroups },
  { mode: 'fallback (RC_CGROUPS=0)', host: 'beta', other: 'alpha', env: { RC_CGROUPS: '0' } as Record<string, string>, skip: false as const },
];

before(async () => {
  stack = await Stack.start({ hostTimeoutS: HOST_TIMEOUT_S, workers: [] });
  for (const m of MODES) await stack.startWorker(m.host, 2, m.env);
});
after(async () => {
  // Nothing of this file may stay behind, whatever failed.
  for (const m of markers)
    for (const pid of processesMatching(`sleep ${m}`))
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
  for (const dir of freezers) {
    try {
      writeFileSync(`${dir}/freezer.state`, 'THAWED');
      rmdirSync(dir);
    } catch {
      /* gone */
    }
  }
  await stack.stop();
});

/** What a failed test left running: killed, so the next test finds its devices free. */
afterEach(async () => {
  const running = ((await stack.api('GET', '/api/jobs?state=running')).body as { jobs: { id: string }[] }).jobs;
  for (const j of running) await stack.api('POST', `/api/jobs/${j.id}/kill`, {}, stack.adminToken);
  for (const m of markers)
    for (const pid of processesMatching(`sleep ${m}`))
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
  for (const m of MODES) if (!stack.workers.has(m.host)) await stack.startWorker(m.host, 2, m.env);
});

/** A sleep of this file's own: `sleep <marker>` names exactly one process on the machine. */
const markers: string[] = [];
function marker(): string {
  const m = `${9000 + markers.length}.${randomInt(100_000, 1_000_000)}`;
  markers.push(m);
  return m;
}
const alive = (ms: string[]) => ms.filter((m) => processesMatching(`sleep ${m}`).length > 0);
const allRunning = (ms: string[]) => ms.every((m) => processesMatching(`sleep ${m}`).length === 1);

/** Grandchildren that leave the job's process group and session; with cgroups also one that drops RC_JOB_ID from its environment. */
function escapees(mode: string): { script: string; sleeps: string[] } {
  const [a, b, c] = [marker(), marker(), marker()];
  // `setsid sleep &`: a session of its own, stdout still the job's pipe; `( … &)`: a double fork, reparented away from the job.
  let script = `setsid sleep ${a} & (setsid sleep ${b} >/dev/null 2>&1 &);`;
  const sleeps = [a, b];
  if (mode === 'cgroup') {
    script += ` (env -i setsid sleep ${c} >/dev/null 2>&1 &);`;
    sleeps.push(c);
  }
  return { script, sleeps };
}

const started = (args: string[], script: string) => stack.runJob(args, script);

const hostFree = (host: string) =>
  stack.waitFor(
    async () => (await stack.devices()).filter((d) => d.name.startsWith(`${host}:`)).every((d) => d.state === 'free'),
    `${host}'s devices to be free`,
    20_000,
  );

/** Starts the host's worker again on the same state; resolves once it is connected (its hello acknowledged), with its log so far. */
async function restartWorker(host: string, env: Record<string, string>): Promise<{ log: () => string; startedAt: number }> {
  let log = '';
  const startedAt = Date.now();
  const starting = stack.startWorker(host, 2, env);
  // startWorker spawns at once for a host it knows: its output is caught from the first line.
  stack.workers.get(host)!.stdout!.on('data', (d: Buffer) => {
    log += d.toString();
  });
  await starting;
  await stack.waitFor(() => /connected to /.test(log), `the restarted ${host} to say hello`, 30_000);
  return { log: () => log, startedAt };
}

interface Dev {
  name: string;
  state: string;
  unhealthy: { reason: string; evidence: Record<string, unknown> } | null;
}
const device = async (name: string): Promise<Dev> => ((await stack.api('GET', `/api/devices/${name}`)).body as { device: Dev }).device;

for (const { mode, host, other, env, skip } of MODES) {
  test(`${mode}: rc kill ends the job's whole tree before its end is reported, and nothing of the host's other job`, { skip }, async () => {
    await hostFree(host);
    const mine = escapees(mode);
    const last = marker();
    const a = started(['-d', `${host}:gpu0`], `${mine.script} sleep ${last}`);
    const theirs = escapees(mode);
    const bLast = marker();
    const b = started(['-d', `${host}:gpu1`], `${theirs.script} sleep ${bLast}`);
    const aId = await a.id;
    const bId = await b.id;
    await stack.waitFor(() => allRunning([...mine.sleeps, last, ...theirs.sleeps, bLast]), 'every sleep to run');
    const killed = await stack.cli(['kill', aId]);
    assert.equal(killed.code, 0, killed.stderr);
    const r = await a.done;
    assert.match(r.stderr, new RegExp(`job ${aId} was killed`));
    // rc run exits on the job's end: by then nothing of it may be left.
    assert.deepEqual(alive([...mine.sleeps, last]), [], 'the killed job left processes behind');
    assert.ok(allRunning([...theirs.sleeps, bLast]), "the host's other job was touched");
    assert.equal((await stack.cli(['kill', bId])).code, 0);
    await b.done;
    assert.deepEqual(alive([...theirs.sleeps, bLast]), []);
    await hostFree(host);
  });

  test(`${mode}: --max-runtime ends the job's whole tree before its end is reported`, { skip }, async () => {
    await hostFree(host);
    const { script, sleeps } = escapees(mode);
    const last = marker();
    const r = await stack.cli(['run', '-d', `${host}:gpu0`, '--max-runtime', '1s', '--', 'sh', '-c', `${script} echo hi; sleep ${last}`]);
    assert.equal(r.code, 204, r.stderr);
    assert.equal(r.stdout, 'hi\n');
    assert.match(r.stderr, /was killed: max_runtime exceeded/);
    assert.deepEqual(alive([...sleeps, last]), []);
  });

  test(`${mode}: what a job leaves running when it exits is killed before its end is reported`, { skip }, async () => {
    await hostFree(host);
    const { script, sleeps } = escapees(mode);
    const t0 = Date.now();
    const r = await stack.cli(['run', '-d', `${host}:gpu0`, '--', 'sh', '-c', `${script} echo started; exit 3`]);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout, 'started\n');
    assert.deepEqual(alive(sleeps), []);
    // The setsid sleep held the job's stdout: its end is not a 2-second wait for the pipe any more.
    assert.ok(Date.now() - t0 < 1900, `the job took ${Date.now() - t0} ms`);
  });

  test(`${mode}: a terminal job (rc run --tty): rc kill and its own exit end its whole tree`, { skip }, async () => {
    await hostFree(host);
    const killedTree = escapees(mode);
    const last = marker();
    const t = started(['--tty', '-d', `${host}:gpu0`], `${killedTree.script} sleep ${last}`);
    const id = await t.id;
    await stack.waitFor(() => allRunning([...killedTree.sleeps, last]), "the terminal's sleeps to run");
    assert.equal((await stack.cli(['kill', id])).code, 0);
    await t.done;
    assert.deepEqual(alive([...killedTree.sleeps, last]), []);

    const exited = escapees(mode);
    const r = await stack.cli(['run', '--tty', '-d', `${host}:gpu0`, '--', 'sh', '-c', `${exited.script} echo started; exit 4`]);
    assert.equal(r.code, 4, r.stderr);
    assert.deepEqual(alive(exited.sleeps), []);
  });

  test(`${mode}: a worker killed with SIGKILL leaves its jobs running; the next one kills them all before it says hello, and nothing of another host`, {
    skip,
  }, async () => {
    await hostFree(host);
    await hostFree(other);
    const first = escapees(mode);
    const firstLast = marker();
    const second = escapees(mode);
    const secondLast = marker();
    const a = started(['-d', `${host}:gpu0`], `${first.script} sleep ${firstLast}`);
    const b = started(['-d', `${host}:gpu1`], `${second.script} sleep ${secondLast}`);
    const theirs = escapees(mode === 'cgroup' ? 'fallback' : 'cgroup');
    const theirLast = marker();
    const c = started(['-d', `${other}:gpu0`], `${theirs.script} sleep ${theirLast}`);
    await Promise.all([a.id, b.id, c.id]);
    const mine = [...first.sleeps, firstLast, ...second.sleeps, secondLast];
    await stack.waitFor(() => allRunning([...mine, ...theirs.sleeps, theirLast]), 'every sleep to run');

    await stack.stopWorker(host, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    // The defect the restart mends: the jobs of a dead worker run on as orphans.
    assert.ok(allRunning(mine), 'the orphans run on after the worker died');

    const { log, startedAt } = await restartWorker(host, env);
    // Killed before the hello: by the time the controller has it, nothing is left.
    assert.deepEqual(alive(mine), [], log());
    assert.ok(allRunning([...theirs.sleeps, theirLast]), "another host's job was touched");
    const m = /killed (\d+) process\(es\) of (\d+) job\(s\) left by the previous run in (\d+) ms/.exec(log());
    assert.ok(m, log());
    assert.equal(Number(m[2]), 2, log());
    assert.ok(Number(m[1]) >= mine.length, log());
    console.log(
      `# ${mode}: time for a restarted worker to clean up its orphans: ${m[3]} ms (${m[1]} processes of ${m[2]} jobs; worker start to hello ${Date.now() - startedAt} ms)`,
    );
    const lost = await a.done;
    assert.equal(lost.code, 205, lost.stderr);
    await b.done;

    const cId = await c.id;
    assert.equal((await stack.cli(['kill', cId])).code, 0);
    await c.done;
    assert.deepEqual(alive([...theirs.sleeps, theirLast]), []);
    await hostFree(host);
  });
}

// A process the kernel will not let die yet: frozen by the cgroup v1 freezer, SIGKILL waits for the thaw (state D).
const FREEZER = '/sys/fs/cgroup/freezer';
const freezers: string[] = [];
const hasFreezer = existsSync(`${FREEZER}/freezer.state`) || existsSync(`${FREEZER}/cgroup.procs`);
function freeze(pid: number): () => void {
  const dir = `${FREEZER}/rc-test-${process.pid}-${randomInt(1_000_000)}`;
  mkdirSync(dir);
  freezers.push(dir);
  writeFileSync(`${dir}/cgroup.procs`, String(pid));
  writeFileSync(`${dir}/freezer.state`, 'FROZEN');
  return () => {
    writeFileSync(`${dir}/freezer.state`, 'THAWED');
    for (let i = 0; i < 100 && readFileSync(`${dir}/cgroup.procs`, 'utf8').trim(); i++) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    try {
      rmdirSync(dir);
    } catch {
      /* still in use */
    }
  };
}

const clear = async (name: string) => {
  const r = await stack.api('POST', `/api/admin/devices/${name}/clear`, { reason: 'the test thawed the process' }, stack.adminToken);
  assert.equal(r.status, 200, JSON.stringify(r.body));
};

for (const { mode, host, env, skip } of MODES) {
  test(`${mode}: a process of a finished job that cannot be killed quarantines its device in the job's end report`, {
    skip: skip || (!hasFreezer && 'no cgroup v1 freezer on this host'),
  }, async () => {
    await hostFree(host);
    const stuck = marker();
    const r = started(['-d', `${host}:gpu1`], `setsid sleep ${stuck} & echo started; sleep 0.5`);
    const id = await r.id;
    await stack.waitFor(() => processesMatching(`sleep ${stuck}`).length === 1, 'the sleep to run');
    const thaw = freeze(processesMatching(`sleep ${stuck}`)[0]!);
    try {
      const done = await r.done;
      assert.equal(done.code, 0, done.stderr);
      const d = await device(`${host}:gpu1`);
      assert.equal(d.state, 'unhealthy');
      assert.match(d.unhealthy!.reason, new RegExp(`processes of job ${id} could not be killed`));
      assert.equal((await device(`${host}:gpu0`)).state, 'free');
    } finally {
      thaw();
    }
    await stack.waitFor(() => processesMatching(`sleep ${stuck}`).length === 0, 'the thawed sleep to die of its SIGKILL');
    await clear(`${host}:gpu1`);
  });

  test(`${mode}: a restarted worker that cannot kill an orphan says so in its hello, and the orphan's device is quarantined`, {
    skip: skip || (!hasFreezer && 'no cgroup v1 freezer on this host'),
  }, async () => {
    await hostFree(host);
    const stuck = marker();
    const other = marker();
    const a = started(['-d', `${host}:gpu1`], `setsid sleep ${stuck} & sleep ${other}`);
    const id = await a.id;
    await stack.waitFor(() => allRunning([stuck, other]), 'the sleeps to run');
    const thaw = freeze(processesMatching(`sleep ${stuck}`)[0]!);
    try {
      await stack.stopWorker(host, 'SIGKILL');
      const { log } = await restartWorker(host, env);
      assert.deepEqual(alive([other]), [], log());
      assert.match(log(), new RegExp(`could not kill 1 process\\(es\\) of job ${id}`));
      const d = await device(`${host}:gpu1`);
      assert.equal(d.state, 'unhealthy', log());
      assert.match(d.unhealthy!.reason, new RegExp(`processes of job ${id} from the worker's previous run could not be killed`));
      assert.equal((await device(`${host}:gpu0`)).state, 'free');
    } finally {
      thaw();
    }
    await a.done;
    await stack.waitFor(() => processesMatching(`sleep ${stuck}`).length === 0, 'the thawed sleep to die of its SIGKILL');
    await clear(`${host}:gpu1`);
  });
}
