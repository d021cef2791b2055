// Shells made ready ahead of jobs (worker/ready-shells.ts), on real processes: the script a
// ready shell runs gives the command exactly its argv, environment and directory, and a job
// started in a ready shell runs in its own cgroup, as the job's main process, with nothing
// left of the shell.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { loadWorkerConfig } from '../../worker/config';
import { JobSupervisor } from '../../worker/job-supervisor';
import { jobScript } from '../../worker/ready-shells';

const stateDir = mkdtempSync(join(tmpdir(), 'rc-ready-'));
after(() => rmSync(stateDir, { recursive: true, force: true }));

const host = `ready${randomInt(1_000_000)}`;
const probe = JobSupervisor.start({ host, stateDir, cgroups: true, log: () => {} });
await probe.close();
const noCgroups = probe.mode !== 'cgroup' && `no writable cgroup v2 here: ${probe.why}`;

const until = async (cond: () => boolean, what: string) => {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
};

test('RC_READY_SHELLS takes 0 to 64 (default 2), anything else stops the worker naming the setting; RC_JOB_PHASES is a file, empty for none', () => {
  const base = { RC_CONTROLLER: 'http://127.0.0.1:1', RC_HOST_TOKEN: 'rc_h_0123456789abcdef', RC_HOST_NAME: 'box' } as unknown as NodeJS.ProcessEnv;
  const load = (extra: Record<string, string>) => loadWorkerConfig({ ...base, ...extra } as NodeJS.ProcessEnv);
  assert.equal(load({}).RC_READY_SHELLS, 2);
  assert.equal(load({ RC_READY_SHELLS: '0' }).RC_READY_SHELLS, 0);
  assert.equal(load({ RC_JOB_PHASES: '/tmp/phases.jsonl' }).RC_JOB_PHASES, '/tmp/phases.jsonl');
  for (const bad of ['-1', '65', '1.5', 'many']) assert.throws(() => load({ RC_READY_SHELLS: bad }), /RC_READY_SHELLS/, bad);
  assert.equal(load({ RC_JOB_PHASES: '' }).RC_JOB_PHASES, undefined);
});

test('the script gives the command exactly its argv, environment and directory, whatever they hold', () => {
  const cwd = join(stateDir, "it's a dir $HOME");
  mkdirSync(cwd);
  const tricky = ["a'b", 'c d', '$HOME', '`id`', 'line1\nline2\n', '\\back\\', '', '-n', ' lead', 'trail ', '"q"', '*', "'"];
  const env = { PATH: process.env.PATH!, ONE: "x'y", TWO: 'multi\nline\n', EMPTY: '', DOLLAR: '$(id) $PATH', BACK: '\\n' };
  const print = 'console.log(JSON.stringify({ argv: process.argv.slice(1), env: process.env, cwd: process.cwd() }))';
  const argv = [process.execPath, '-e', print, ...tricky];
  const r = spawnSync('/bin/sh', ['-c', jobScript(cwd, env, argv)], { env: {} as NodeJS.ProcessEnv, cwd: '/' });
  assert.equal(r.status, 0, r.stderr.toString());
  const got = JSON.parse(r.stdout.toString());
  assert.deepEqual(got.argv, tricky);
  assert.deepEqual(got.env, env, 'no more and no less than the job environment (no PWD of the shell)');
  assert.equal(got.cwd, cwd);
});

test('a directory the command cannot enter ends it with 126', () => {
  const r = spawnSync('/bin/sh', ['-c', jobScript('/nonexistent/dir', { PATH: '/bin' }, ['true'])], { env: {} as NodeJS.ProcessEnv });
  assert.equal(r.status, 126);
});

test('a job in a ready shell runs in its own cgroup as the spawned pid, reads its stdin, and its cgroup goes with it', { skip: noCgroups }, async () => {
  const sup = JobSupervisor.start({ host, stateDir, cgroups: true, log: () => {} });
  try {
    sup.warm(null, 2);
    await until(() => sup.readyShells === 2, 'two ready shells');
    const jobId = `jr${randomInt(1_000_000)}`;
    const env = { PATH: process.env.PATH!, RC_JOB_ID: jobId };
    const argv = ['sh', '-c', 'cat /proc/self/cgroup; read line; echo "in:$line"; exec sleep 30'];
    // Chosen before the job runs (the state file records it), then opened as the job starts.
    const cgroup = sup.reserve(jobId, argv, env)!;
    assert.match(cgroup, /\/\.ready-\d+-\d+$/, "a ready shell's cgroup");
    const tree = sup.open(jobId, 1);
    assert.equal(tree.cgroup, cgroup);
    const shell = tree.shell!;
    assert.ok(shell, 'the job runs in the ready shell');
    const { child } = shell;
    tree.started(child.pid!);
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
    });
    shell.exec(stateDir, env, argv);
    child.stdin.end('hello\n');
    await until(() => out.includes('in:hello'), 'the job to read its stdin');
    const inCgroup = out
      .split('\n')
      .find((l) => l.startsWith('0::'))!
      .slice(3);
    assert.ok(cgroup.endsWith(inCgroup), `the job is in ${cgroup}, not ${inCgroup}`);
    // The pid node spawned is the job's command now: no shell in between.
    await until(() => readFileSync(`/proc/${child.pid}/cmdline`, 'utf8') === 'sleep\x0030\x00', 'the command to be the spawned pid');
    // Another is made ready in its place.
    await until(() => sup.readyShells === 2, 'the pool refilled');
    const exited = new Promise((r) => child.once('exit', r));
    await tree.signal('KILL');
    await exited;
    assert.deepEqual(await tree.reap(), []);
    await until(() => !existsSync(cgroup), "the job's cgroup to be removed (off the job's path)");
  } finally {
    const folder = dirname(sup.cgroupOf('jx')!);
    await sup.close();
    await until(() => !existsSync(folder) || !readdirSync(folder).some((n) => n.startsWith('.ready-')), 'the ready shells gone at close');
  }
});

test('a ready shell killed before a job takes it is replaced; leftovers of a dead worker are cleared at the next start', { skip: noCgroups }, async () => {
  const sup = JobSupervisor.start({ host, stateDir, cgroups: true, log: () => {} });
  const folder = dirname(sup.cgroupOf('jx')!);
  const pidsIn = () =>
    readdirSync(folder)
      .filter((n) => n.startsWith('.ready-'))
      .flatMap((n) =>
        readFileSync(join(folder, n, 'cgroup.procs'), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map(Number),
      );
  try {
    sup.warm(null, 1);
    await until(() => sup.readyShells === 1 && pidsIn().length === 1, 'a ready shell');
    const [first] = pidsIn();
    process.kill(first!, 'SIGKILL');
    await until(() => sup.readyShells === 1 && pidsIn().length === 1 && pidsIn()[0] !== first, 'another ready shell');
  } finally {
    await sup.close();
  }
  // A worker SIGKILLed: its ready shells read the end of their socket and exit; what stays is cleared.
  const worker = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `const { JobSupervisor } = require(${JSON.stringify(join(import.meta.dirname, '../../worker/job-supervisor'))}); const s = JobSupervisor.start({ host: ${JSON.stringify(host)}, stateDir: ${JSON.stringify(stateDir)}, cgroups: true, log: () => {} }); s.warm(null, 2); setInterval(() => {}, 1000);`,
    ],
    { stdio: 'ignore' },
  );
  await until(() => existsSync(folder) && pidsIn().length === 2, "the other worker's ready shells");
  worker.kill('SIGKILL');
  const again = JobSupervisor.start({ host, stateDir, cgroups: true, log: () => {} });
  try {
    again.warm(null, 1);
    await until(() => again.readyShells === 1 && pidsIn().length === 1, 'only the new ready shell');
  } finally {
    await again.close();
  }
});
