// rc run --name and --env end to end: a real controller and worker as
// processes, the built CLI as a subprocess, a real Postgres underneath. The
// environment reaches the job's process (a plain job and a terminal), its
// values never reach a view, and a name stands for a job id where it picks one.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as pty from 'node-pty';
import { guardPtyEnd } from '../../worker/pty-end';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
/** A value no view may show: found anywhere but in the job's own output, it leaked. */
const SECRET = 'hunter2-s3cr3t-7f1c';

let stack: Stack;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 2 }] });
});
after(async () => stack.stop());

const allFree = () => stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'every device to be free');

interface View {
  id: string;
  name: string | null;
  state: string;
  envKeys: string[];
}

test('--env KEY=VALUE and --env KEY reach the job; the last one for a key wins; rc sets its own variables over nothing', async () => {
  const r = await stack.cli(
    [
      'run',
      '--env',
      'A=1',
      '--env',
      'B=x=y z',
      '--env',
      'A=2',
      '--env',
      'FROM_ME',
      '--env=EMPTY=',
      '--',
      'sh',
      '-c',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
      'echo "A=$A B=$B F=$FROM_ME E=[${EMPTY-unset}] J=$RC_JOB_ID"',
    ],
    { env: { FROM_ME: 'callers value' } },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^A=2 B=x=y z F=callers value E=\[\] J=j[0-9a-v]{10}\n$/);
});

test('--env KEY with KEY unset in the caller is a usage error (exit 2) that says so, and submits nothing', async () => {
  const before = (await stack.api('GET', '/api/jobs?limit=1000')).body as { jobs: View[] };
  const r = await stack.cli(['run', '--env', 'NOT_SET_HERE', '--', 'true']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^rc: usage: --env NOT_SET_HERE: NOT_SET_HERE is not set in your environment/);
  const now = (await stack.api('GET', '/api/jobs?limit=1000')).body as { jobs: View[] };
  assert.equal(now.jobs.length, before.jobs.length, 'nothing was submitted');
});

test('bad, reserved and oversize environments are refused by the CLI (exit 2) with the code the API answers', async () => {
  const cases: [string[], string, RegExp][] = [
    [['--env', '1BAD=x'], 'bad_env', /not an environment variable name/],
    [['--env', 'A-B=x'], 'bad_env', /not an environment variable name/],
    [['--env', '=x'], 'bad_env', /not an environment variable name/],
    [['--env', 'CUDA_VISIBLE_DEVICES=0'], 'reserved_env', /CUDA_VISIBLE_DEVICES is set by rc itself/],
    [['--env', 'RC_JOB_ID=x'], 'reserved_env', /set by rc itself/],
    [['--env', 'NVIDIA_VISIBLE_DEVICES=all'], 'reserved_env', /set by rc itself/],
    [Array.from({ length: 129 }, (_, i) => `--env=V${i}=1`), 'bad_env', /at most 128/],
    [['--env', `BIG=${'x'.repeat(70 * 1024)}`], 'bad_env', /more than the 64 KiB/],
  ];
  for (const [flags, code, message] of cases) {
    const r = await stack.cli(['run', ...flags, '--', 'true']);
    assert.equal(r.code, 2, `${flags[0]}: ${r.stderr}`);
    assert.ok(r.stderr.startsWith(`rc: ${code}: `), r.stderr.slice(0, 300));
    assert.match(r.stderr, message);
  }
});

test('the API refuses the same environments and names with their codes, never a 500', async () => {
  const submit = (extra: Record<string, unknown>) => stack.api('POST', '/api/jobs', { argv: ['true'], submitter: 'tester', ...extra });
  const many = Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`V${i}`, '1']));
  const cases: [Record<string, unknown>, number, string, RegExp][] = [
    [{ env: { '1BAD': 'x' } }, 400, 'bad_env', /^env\.1BAD: .*not an environment variable name/],
    [{ env: { __proto__x: 'ok', 'a b': 'x' } }, 400, 'bad_env', /not an environment variable name/],
    [{ env: { CUDA_VISIBLE_DEVICES: '0' } }, 400, 'reserved_env', /^env\.CUDA_VISIBLE_DEVICES: CUDA_VISIBLE_DEVICES is set by rc itself/],
    [{ env: { RC_DEVICES: 'x' } }, 400, 'reserved_env', /set by rc itself/],
    [{ env: many }, 400, 'bad_env', /at most 128/],
    [{ env: { BIG: 'x'.repeat(70 * 1024) } }, 400, 'bad_env', /64 KiB/],
    [{ env: { A: 'nul\u0000here' } }, 400, 'bad_request', /NUL/],
    [{ env: { A: 5 } }, 400, 'bad_request', /env\.A/],
    [{ env: ['A=1'] }, 400, 'bad_request', /env/],
    [{ kind: 'hold', argv: [], ttlS: 60, env: { A: '1' } }, 400, 'bad_request', /a hold runs no command/],
    [{ name: 'has space' }, 400, 'bad_name', /^name: job name "has space" is not valid/],
    [{ name: '' }, 400, 'bad_name', /not valid/],
    [{ name: '-dash' }, 400, 'bad_name', /not valid/],
    [{ name: 'x'.repeat(64) }, 400, 'bad_name', /not valid/],
    [{ name: 'j0123456789' }, 400, 'bad_name', /looks like a job id/],
    [{ name: 'a:b' }, 400, 'bad_name', /not valid/],
    [{ name: 7 }, 400, 'bad_request', /name/],
    [{ comment: 'two\nlines' }, 400, 'bad_request', /^comment: a comment is one line of text/],
    [{ comment: 'bell\u0007' }, 400, 'bad_request', /^comment: a comment is one line of text/],
    [{ comment: 'line\u2028separator' }, 400, 'bad_request', /^comment: a comment is one line of text/],
    [{ comment: 'x'.repeat(501) }, 400, 'bad_request', /^comment: a comment is at most 500 characters/],
    [{ comment: 5 }, 400, 'bad_request', /comment/],
  ];
  for (const [extra, status, code, message] of cases) {
    const r = await submit(extra);
    const err = (r.body as { error?: { code: string; message: string } }).error;
    assert.equal(r.status, status, `${JSON.stringify(extra).slice(0, 100)}: ${JSON.stringify(r.body).slice(0, 300)}`);
    assert.equal(err?.code, code, JSON.stringify(r.body).slice(0, 300));
    assert.match(err!.message, message);
  }
});

test('--comment is stored and shown by rc describe (text and JSON), rc jobs --json and the API; a job without one shows none', async () => {
  const note = 'why: ticket 42 — ünïcode & <b>not html</b>';
  const r = await stack.cli(['run', '--detach', '--comment', note, '--', 'true']);
  assert.equal(r.code, 0, r.stderr);
  const id = r.stdout.trim();
  const described = await stack.cli(['describe', id]);
  assert.equal(described.code, 0, described.stderr);
  assert.ok(
    described.stdout.split('\n').some((l) => /^ *comment: +/.test(l) && l.endsWith(note)),
    described.stdout,
  );
  const json = JSON.parse((await stack.cli(['describe', id, '--json'])).stdout) as { job: { comment: string | null } };
  assert.equal(json.job.comment, note);
  const api = await stack.api('GET', `/api/jobs/${id}`);
  assert.equal((api.body as { job: { comment: string | null } }).job.comment, note);
  const listed = JSON.parse((await stack.cli(['jobs', '--json'])).stdout) as { jobs: (View & { comment: string | null })[] };
  assert.equal(listed.jobs.find((j) => j.id === id)?.comment, note);
  const plain = (await stack.cli(['run', '--detach', '--', 'true'])).stdout.trim();
  assert.doesNotMatch((await stack.cli(['describe', plain])).stdout, /^ *comment:/m);
  assert.equal((JSON.parse((await stack.cli(['describe', plain, '--json'])).stdout) as { job: { comment: string | null } }).job.comment, null);
  await allFree();
});

test('a bad --comment is refused by the controller with its code, and the CLI says so', async () => {
  const r = await stack.cli(['run', '--comment', 'two\nlines', '--', 'true']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /^rc: bad_request: comment: a comment is one line of text: it must be printable text, without control characters/);
});

test('bad names are refused by the CLI (exit 2, bad_name)', async () => {
  for (const name of ['has space', 'j0123456789', '.hidden', 'x'.repeat(64)]) {
    const r = await stack.cli(['run', '--name', name, '--', 'true']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^rc: bad_name: job name /);
  }
});

test('env values appear in no view: ps, jobs, describe (text and JSON), logs, the API, the audit log, the controller log', async () => {
  const run = stack.runJob(['--name', 'secretive', '--env', `API_KEY=${SECRET}`, '--env', 'OTHER=1'], 'test -n "$API_KEY" && echo has-key; sleep 30');
  const id = await run.id;
  await stack.waitFor(async () => (await stack.cli(['logs', id])).stdout.includes('has-key'), 'the job to see its key');
  const texts: [string, string][] = [];
  for (const args of [
    ['ps'],
    ['ps', '--json'],
    ['jobs'],
    ['jobs', '--json'],
    ['describe', id],
    ['describe', id, '--json'],
    ['describe', 'secretive'],
    ['logs', id],
  ]) {
    const r = await stack.cli(args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    texts.push([args.join(' '), r.stdout + r.stderr]);
  }
  for (const path of [`/api/jobs/${id}`, '/api/jobs', '/api/ps', '/api/devices', '/api/devices/alpha:gpu0', '/api/devices/alpha:gpu1']) {
    texts.push([path, JSON.stringify((await stack.api('GET', path)).body)]);
  }
  for (const [where, text] of texts) assert.ok(!text.includes(SECRET), `${where} shows the value: ${text.slice(0, 500)}`);
  // The keys are shown.
  const view = ((await stack.api('GET', `/api/jobs/${id}`)).body as { job: View }).job;
  assert.deepEqual(view.envKeys, ['API_KEY', 'OTHER']);
  assert.equal(view.name, 'secretive');
  const described = texts.find(([w]) => w === `describe ${id}`)![1];
  assert.match(described, /^env: +API_KEY, OTHER$/m);
  assert.match(described, /^name: +secretive$/m);
  assert.match(texts.find(([w]) => w === 'describe secretive')![1], new RegExp(`^${id}  running`));
  const kill = await stack.cli(['kill', 'secretive']);
  assert.equal(kill.code, 0, kill.stderr);
  assert.equal(kill.stdout, `stopping ${id}\n`);
  await run.done;
  const { default: postgres } = await import('postgres');
  const sql = postgres(stack.dbUrl, { max: 1 });
  const audit = await sql<{ row: string }[]>`select row_to_json(audit)::text as row from audit`;
  await sql.end();
  assert.ok(audit.length > 0 && audit.some((a) => a.row.includes(id)), 'the kill was audited');
  for (const a of audit) assert.ok(!a.row.includes(SECRET), `the audit log shows the value: ${a.row}`);
  assert.ok(!stack.controllerLog.includes(SECRET), 'the controller log shows the value');
  await allFree();
});

test('a queued job keeps its environment until it starts', async () => {
  const a = stack.runJob(['-d', 'alpha:gpu0'], 'sleep 30');
  const aId = await a.id;
  const queued = stack.cli(['run', '-d', 'alpha:gpu0', '--env', `LATER=${SECRET}`, '--', 'sh', '-c', 'echo "later=$LATER"']);
  await stack.waitFor(async () => /queued #1/.test((await stack.cli(['ps'])).stdout), 'the second job to queue');
  assert.equal((await stack.cli(['kill', aId])).code, 0);
  const r = await queued;
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `later=${SECRET}\n`);
  await a.done;
  await allFree();
});

test('an ended job keeps no env value in the database, whatever its end (exited, killed, cancelled while queued); its keys still show', async () => {
  const done = await stack.cli(['run', '-d', 'alpha:gpu0', '--name', 'wipe-done', '--env', `DONE_KEY=${SECRET}`, '--', 'true']);
  assert.equal(done.code, 0, done.stderr);
  const running = stack.runJob(['-d', 'alpha:gpu0', '--name', 'wipe-killed', '--env', `KILLED_KEY=${SECRET}`], 'sleep 30');
  await running.id;
  const queued = stack.cli(['run', '-d', 'alpha:gpu0', '--name', 'wipe-queued', '--env', `QUEUED_KEY=${SECRET}`, '--env', 'EMPTY=', '--', 'true']);
  await stack.waitFor(async () => /queued #1/.test((await stack.cli(['ps'])).stdout), 'the third job to queue');
  const { default: postgres } = await import('postgres');
  const sql = postgres(stack.dbUrl, { max: 1 });
  const stored = async (name: string) => (await sql<{ env: string | null }[]>`select env::text as env from jobs where name = ${name}`)[0]?.env ?? null;
  // A job that has not ended keeps its values: it needs them to start.
  assert.match((await stored('wipe-queued'))!, new RegExp(SECRET));
  assert.equal((await stack.cli(['kill', 'wipe-queued'])).code, 0);
  await queued;
  assert.equal((await stack.cli(['kill', 'wipe-killed'])).code, 0);
  await running.done;
  const expected: [string, Record<string, string>][] = [
    ['wipe-done', { DONE_KEY: '' }],
    ['wipe-killed', { KILLED_KEY: '' }],
    ['wipe-queued', { EMPTY: '', QUEUED_KEY: '' }],
  ];
  for (const [name, env] of expected) {
    const text = await stored(name);
    assert.ok(text && !text.includes(SECRET), `${name} still stores its value: ${text}`);
    assert.deepEqual(JSON.parse(text), env);
    const view = ((await stack.api('GET', `/api/jobs/${name}`)).body as { job?: View }).job;
    assert.deepEqual(view?.envKeys, Object.keys(env), `${name}: ${JSON.stringify(view)}`);
  }
  const states = await sql<{ name: string; state: string }[]>`select name, state from jobs where name like 'wipe-%' order by name`;
  assert.deepEqual(
    states.map((r) => `${r.name} ${r.state}`),
    ['wipe-done succeeded', 'wipe-killed killed', 'wipe-queued cancelled'],
  );
  await sql.end();
  await allFree();
});

test('names show in rc ps, rc jobs and rc describe; logs and attach take a name', async () => {
  const run = stack.runJob(['--name', 'shown-1'], 'echo line-one; sleep 30');
  const id = await run.id;
  await stack.waitFor(async () => (await stack.cli(['logs', 'shown-1'])).stdout.includes('line-one'), 'logs by name');
  const ps = (await stack.cli(['ps'])).stdout;
  assert.match(ps, /^JOB +STATE +WHERE +SUBMITTER +FOR +LIMIT +NAME +COMMAND +GPU$/m);
  assert.match(ps, new RegExp(`^${id} +running +alpha:gpu\\d +tester +\\d+s +- +shown-1 +sh -c`, 'm'));
  const jobs = (await stack.cli(['jobs'])).stdout;
  assert.match(jobs, /^JOB +STATE +EXIT +DEVICE +SUBMITTER +CREATED +NAME +COMMAND$/m);
  assert.match(jobs, new RegExp(`^${id} +running +- +alpha:gpu\\d +tester +\\d+s ago +shown-1 +sh -c`, 'm'));
  const psJson = JSON.parse((await stack.cli(['ps', '--json'])).stdout) as { jobs: View[] };
  assert.equal(psJson.jobs.find((j) => j.id === id)?.name, 'shown-1');
  const jobsJson = JSON.parse((await stack.cli(['jobs', '--json'])).stdout) as { jobs: View[] };
  assert.equal(jobsJson.jobs.find((j) => j.id === id)?.name, 'shown-1');
  const logs = await stack.cli(['logs', 'shown-1']);
  assert.equal(logs.code, 0, logs.stderr);
  assert.equal(logs.stdout, `${id}\nline-one\n`);
  // attach by name follows the job to its end and exits as rc run would.
  const attach = stack.cli(['attach', 'shown-1']);
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await stack.cli(['kill', 'shown-1'])).code, 0);
  const attached = await attach;
  assert.ok(attached.stdout.startsWith(`${id}\nline-one\n`), attached.stdout);
  assert.match(attached.stderr, new RegExp(`job ${id} was killed: killed by tester`));
  await run.done;
  // Finished, and the only job ever named so: the name still finds it.
  const after = await stack.cli(['describe', 'shown-1']);
  assert.equal(after.code, 0, after.stderr);
  assert.match(after.stdout, new RegExp(`^${id}  killed`));
  await allFree();
});

test('a name several jobs share: the one running wins; else ambiguous_name lists the ids, newest first; unknown is not_found', async () => {
  const first = await stack.cli(['run', '--name', 'twin', '--', 'true']);
  assert.equal(first.code, 0, first.stderr);
  const second = await stack.cli(['run', '--name', 'twin', '--', 'true']);
  assert.equal(second.code, 0, second.stderr);
  const twins = (((await stack.api('GET', '/api/jobs?limit=1000')).body as { jobs: View[] }).jobs as View[]).filter((j) => j.name === 'twin').map((j) => j.id);
  assert.equal(twins.length, 2);
  for (const args of [
    ['kill', 'twin'],
    ['logs', 'twin'],
    ['attach', 'twin'],
    ['describe', 'twin'],
  ]) {
    const r = await stack.cli(args);
    assert.equal(r.code, 214, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, `rc: ambiguous_name: twin names 2 jobs (${twins.join(', ')}, newest first); use a job id\n`);
  }
  const api = await stack.api('POST', '/api/jobs/twin/kill', { submitter: 'tester' });
  assert.equal(api.status, 409);
  assert.equal((api.body as { error: { code: string } }).error.code, 'ambiguous_name');
  // A third, running: it is the one the name means now.
  const run = stack.runJob(['--name', 'twin'], 'sleep 30');
  const id = await run.id;
  const described = await stack.cli(['describe', 'twin', '--json']);
  assert.equal((JSON.parse(described.stdout) as { job: View }).job.id, id);
  const killed = await stack.cli(['kill', 'twin']);
  assert.equal(killed.stdout, `stopping ${id}\n`);
  await run.done;
  const nope = await stack.cli(['kill', 'no-such-name']);
  assert.equal(nope.code, 208);
  assert.match(nope.stderr, /^rc: not_found: no job no-such-name/);
  for (const path of ['/api/jobs/no-such-name', '/api/jobs/bad%20name', '/api/jobs/no-such-name/stream']) {
    const r = await stack.api('GET', path);
    assert.equal(r.status, 404, path);
    assert.equal((r.body as { error: { code: string } }).error.code, 'not_found');
  }
  await allFree();
});

test('rc run --tty: the terminal gets --env and --name', async () => {
  const p = pty.spawn(
    process.execPath,
    [join(ROOT, 'dist', 'rc.cjs'), 'run', '--tty', '--name', 'term-1', '--env', 'TTY_VAR=in-the-terminal', '--', 'sh', '-c', 'echo "got=$TTY_VAR"; exit 4'],
    {
      name: 'xterm-256color',
      cols: 80,
      rows: 24,
      cwd: ROOT,
      env: {
        PATH: process.env.PATH!,
        HOME: process.env.HOME ?? '/root',
        RC_CONTROLLER: stack.controllerUrl,
        RC_TOKEN: stack.clientToken,
        RC_SUBMITTER: 'tester',
      },
    },
  );
  guardPtyEnd(p);
  let out = '';
  p.onData((d) => {
    out += d;
  });
  const code = await new Promise<number>((resolve) => p.onExit(({ exitCode }) => resolve(exitCode)));
  assert.equal(code, 4, out);
  assert.match(out, /got=in-the-terminal/);
  const view = ((await stack.api('GET', '/api/jobs/term-1')).body as { job: View & { kind: string } }).job;
  assert.deepEqual([view.kind, view.name, view.envKeys], ['tty', 'term-1', ['TTY_VAR']]);
  await allFree();
});
