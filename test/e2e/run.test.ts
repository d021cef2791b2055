// rc run end to end: a real controller and worker as processes, the built CLI
// as a subprocess, a real Postgres underneath.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { io } from 'socket.io-client';
import { processesMatching, Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 2 }] });
});
after(async () => stack.stop());

const allFree = () => stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'every device to be free');

test("stdout and stderr come back in order on their own streams, and rc exits with the command's code", async () => {
  const r = await stack.cli(['run', '--', 'sh', '-c', 'echo out; sleep 0.05; echo err >&2; sleep 0.05; echo out2; exit 7']);
  assert.equal(r.stdout, 'out\nout2\n');
  assert.equal(r.stderr, 'err\n');
  assert.equal(r.code, 7);
  const ok = await stack.cli(['run', '--', 'true']);
  assert.equal(ok.code, 0);
});

test('arguments after -- reach the command exactly: spaces, quotes, $, empty strings', async () => {
  const args = ['a b', '', '$HOME', '"q"', "it's", '--select', '*', '\\n'];
  const r = await stack.cli(['run', '--', 'printf', '[%s]\\n', ...args]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, args.map((a) => `[${a}]\n`).join(''));
});

test('the job gets CUDA_VISIBLE_DEVICES and a process group of its own', async () => {
  const r = await stack.cli([
    'run',
    '--',
    'sh',
    '-c',
    'echo "$CUDA_VISIBLE_DEVICES $RC_DEVICES"; read pid comm state ppid pgrp rest < /proc/$$/stat; echo "$pid $pgrp"',
  ]);
  const [cuda, group] = r.stdout.trim().split('\n');
  assert.match(cuda!, /^[01] alpha:gpu[01]$/);
  const [pid, pgrp] = group!.split(' ');
  assert.equal(pid, pgrp, 'the command leads its own process group');
});

test("a selector nothing carries is refused at once with the manual's message", async () => {
  const r = await stack.cli(['run', '--select', 'vram>=200G', '--', 'true']);
  assert.equal(r.stderr, 'rc: no_matching_device: no device matches the selector: vram>=200G\n');
  assert.equal(r.code, 201);
  const d = await stack.cli(['run', '-d', 'alpha:gpu9', '--', 'true']);
  assert.match(d.stderr, /^rc: no_matching_device: .*alpha:gpu9 does not exist/);
  assert.equal(d.code, 201);
  const bad = await stack.cli(['run', '--select', 'vram~40G', '--', 'true']);
  assert.match(bad.stderr, /^rc: bad_selector: .*column 1/);
  assert.equal(bad.code, 212);
});

test('a command that does not exist exits 127 with a clear message', async () => {
  const r = await stack.cli(['run', '--', 'no-such-command-rc']);
  assert.equal(r.code, 127);
  assert.match(r.stderr, /no-such-command-rc: command not found/);
});

test('a busy fleet queues the job, which starts as soon as a device frees', async () => {
  await allFree();
  const hogs = [stack.cli(['run', '--', 'sleep', '1']), stack.cli(['run', '--', 'sleep', '1.2'])];
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'busy'), 'both devices busy');
  const queued = await stack.cli(['run', '--', 'sh', '-c', 'echo "$RC_JOB_ID"']);
  assert.equal(queued.code, 0);
  const done = await Promise.all(hogs);
  assert.deepEqual(
    done.map((h) => h.code),
    [0, 0],
  );
  const job = await stack.api('GET', `/api/jobs/${queued.stdout.trim()}`);
  const j = (job.body as { job: { startedAt: string; createdAt: string } }).job;
  const firstFree = (await stack.api('GET', `/api/jobs/${queued.stdout.trim()}`)).status;
  assert.equal(firstFree, 200);
  assert.ok(Date.parse(j.startedAt) - Date.parse(j.createdAt) >= 800, 'it waited for a device');
});

test('a job far back in the queue starts on a device that the jobs ahead of it do not want', { timeout: 60_000 }, async () => {
  await allFree();
  const hold = await stack.api('POST', '/api/jobs', { kind: 'hold', ttlS: 300, submitter: 'tester', device: 'alpha:gpu0' });
  assert.equal(hold.status, 201, JSON.stringify(hold.body));
  const holdId = (hold.body as { job: { id: string } }).job.id;
  // More jobs for the held device than a pass first reads (FIRST_WINDOW_MIN), then one for the free one.
  const ahead: string[] = [];
  for (let i = 0; i < 100; i++) {
    const r = await stack.api('POST', '/api/jobs', { argv: ['true'], submitter: 'tester', device: 'alpha:gpu0' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    ahead.push((r.body as { job: { id: string } }).job.id);
  }
  try {
    const behind = await stack.cli(['run', '-d', 'alpha:gpu1', '--', 'echo', 'ran behind 100'], { timeoutMs: 20_000 });
    assert.equal(behind.code, 0, behind.stderr);
    assert.equal(behind.stdout, 'ran behind 100\n');
    assert.equal((await stack.job(ahead[0]!)).state, 'queued', 'the jobs ahead still wait for their device');
  } finally {
    for (const id of [holdId, ...ahead]) await stack.cli(['kill', id]);
  }
});

test('--no-wait fails at once with busy when nothing is free', async () => {
  await allFree();
  const hogs = [stack.cli(['run', '--', 'sleep', '1']), stack.cli(['run', '--', 'sleep', '1'])];
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'busy'), 'both devices busy');
  const r = await stack.cli(['run', '--no-wait', '--', 'true']);
  assert.equal(r.code, 202);
  assert.match(r.stderr, /is busy and could not be queued/);
  await Promise.all(hogs);
});

test('Ctrl-C kills the whole process group, grandchildren included, and frees the device', async () => {
  await allFree();
  let cli: import('node:child_process').ChildProcess | null = null;
  const result = stack.cli(['run', '--', 'sh', '-c', 'sleep 313 & sleep 314 & wait'], {
    onSpawn: (c) => {
      cli = c;
    },
  });
  await stack.waitFor(() => processesMatching('sleep 313').length === 1 && processesMatching('sleep 314').length === 1, 'the job and its grandchildren to run');
  cli!.kill('SIGINT');
  const r = await result;
  assert.equal(r.code, 130, r.stderr);
  await stack.waitFor(() => processesMatching('sleep 313').length === 0 && processesMatching('sleep 314').length === 0, 'no process left behind');
  await allFree();
  const jobs = await stack.api('GET', '/api/devices');
  assert.equal(jobs.status, 200);
});

test('nobody unauthenticated gets in: API routes and sockets', async () => {
  for (const [method, path] of [
    ['GET', '/api/devices'],
    ['GET', '/api/hosts'],
    ['POST', '/api/jobs'],
    ['GET', '/api/whoami'],
    ['POST', '/api/admin/hosts'],
  ] as const) {
    const none = await stack.api(method, path, method === 'POST' ? {} : undefined, null);
    assert.equal(none.status, 401, `${method} ${path}`);
    assert.equal((none.body as { error: { code: string } }).error.code, 'unauthorized');
    const wrong = await stack.api(method, path, method === 'POST' ? {} : undefined, 'rc_c_not-a-real-token');
    assert.equal(wrong.status, 401);
  }
  const asClient = await stack.api('POST', '/api/admin/hosts', { name: 'x' });
  assert.equal(asClient.status, 403, 'a client token is not an admin token');
  const r = await stack.cli(['devices'], { env: { RC_TOKEN: 'rc_c_wrong' } });
  assert.equal(r.code, 206);
  assert.match(r.stderr, /^rc: unauthorized: /);
  for (const [ns, token] of [
    ['/worker', undefined],
    ['/worker', stack.clientToken],
    ['/worker', 'rc_h_nope'],
    ['/', undefined],
    ['/', 'rc_c_nope'],
  ] as const) {
    const socket = io(stack.controllerUrl + ns, { auth: token ? { token } : {}, transports: ['websocket'], reconnection: false });
    const outcome = await new Promise<string>((resolve) => {
      socket.on('connect', () => resolve('connected'));
      socket.on('connect_error', (e) => resolve(e.message));
    });
    socket.close();
    assert.match(outcome, /unauthorized/, `${ns} with ${token ?? 'no token'}`);
  }
});

test('bad input gets a clear error with a stable code, never a 500', async () => {
  const cases: [unknown, RegExp][] = [
    ['{not json', /not valid JSON/],
    [{ submitter: 's', argv: [] }, /argv: a command is required/],
    [{ submitter: 's' }, /argv/],
    [{ submitter: 's', argv: ['true'], gpus: 0 }, /gpus/],
    [{ submitter: 's', argv: ['true'], priority: 11 }, /priority/],
    [{ submitter: 's', argv: ['true'], cwd: 'relative' }, /absolute path/],
    [{ submitter: 's', argv: ['true'], surprise: 1 }, /surprise|unrecognized/i],
    [{ submitter: '', argv: ['true'] }, /submitter/],
  ];
  for (const [body, message] of cases) {
    const r = await stack.api('POST', '/api/jobs', body);
    assert.equal(r.status, 400, JSON.stringify(body));
    const err = (r.body as { error: { code: string; message: string } }).error;
    assert.equal(err.code, 'bad_request');
    assert.match(err.message, message);
    assert.doesNotMatch(err.message, /at .*\.ts:\d+/, 'no stack trace');
  }
  const sel = await stack.api('POST', '/api/jobs', { submitter: 's', argv: ['true'], selector: 'a=1,' });
  assert.equal(sel.status, 400);
  assert.equal((sel.body as { error: { code: string } }).error.code, 'bad_selector');
  const missing = await stack.api('GET', '/api/jobs/jnope');
  assert.equal(missing.status, 404);
  const route = await stack.api('GET', '/api/nothing-here');
  assert.equal(route.status, 404);
  const usage = await stack.cli(['run']);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /^rc: usage: /);
});

test("rc kill refuses someone else's job with not_job_owner, and kills your own", async () => {
  await allFree();
  let id = '';
  const running = stack.cli(['run', '--', 'sh', '-c', 'echo "$RC_JOB_ID"; sleep 30'], {
    onSpawn: (c) =>
      c.stdout!.on('data', (d: Buffer) => {
        id ||= d.toString().trim();
      }),
  });
  await stack.waitFor(() => id !== '', 'the job to print its id');
  const other = await stack.cli(['kill', id], { env: { RC_SUBMITTER: 'someone-else' } });
  assert.equal(other.code, 209);
  assert.match(other.stderr, /^rc: not_job_owner: /);
  const mine = await stack.cli(['kill', id]);
  assert.equal(mine.code, 0, mine.stderr);
  const r = await running;
  assert.equal((await stack.job(id)).state, 'killed');
  assert.match(r.stderr, new RegExp(`job ${id} was killed: killed by tester \\(token \\d+ local client \\(npm start\\)\\)`));
});

test("the CLI finds the checkout's credentials with no environment", async () => {
  const r = await stack.cli(['devices'], { env: { RC_CONTROLLER: '', RC_TOKEN: '', RC_DATA_DIR: stack.dataDir } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /alpha:gpu0\s+free/);
  const none = await stack.cli(['devices'], { env: { RC_CONTROLLER: '', RC_TOKEN: '', RC_DATA_DIR: '/nonexistent' } });
  assert.equal(none.code, 206);
  assert.match(none.stderr, /^rc: not_configured: set RC_CONTROLLER and RC_TOKEN/);
});

test('the CLI uses no deprecated Node API: with pending deprecations thrown, every path still works and nothing is warned', async () => {
  const env = { NODE_OPTIONS: '--pending-deprecation --throw-deprecation' };
  for (const args of [['--version'], ['run', '--', 'true'], ['run', '--', 'sh', '-c', 'echo out; echo err >&2'], ['devices'], ['jobs', '--json']]) {
    const r = await stack.cli(args, { env });
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /Deprecation/, args.join(' '));
  }
  const gone = await stack.cli(['devices'], { env: { ...env, RC_CONTROLLER: 'http://127.0.0.1:1' } });
  assert.equal(gone.code, 207, gone.stderr);
  assert.match(gone.stderr, /^rc: unreachable: cannot reach the controller at http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\)/);
});

test("a job's output bigger than a pipe holds reaches rc's stdout whole before rc exits", async () => {
  const r = await stack.cli(['run', '--', 'sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" x; echo; head -c 300000 /dev/zero | tr "\\0" y >&2']);
  assert.equal(r.code, 0, r.stderr.slice(-500));
  assert.equal(r.stdout, `${'x'.repeat(3_000_000)}\n`);
  assert.equal(r.stderr, 'y'.repeat(300_000));
});

test('--gpus 2 claims two devices on one host, all or nothing, and lists both in CUDA_VISIBLE_DEVICES', async () => {
  await allFree();
  const r = await stack.cli(['run', '--gpus', '2', '--', 'sh', '-c', 'echo "$CUDA_VISIBLE_DEVICES|$RC_DEVICES"']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '0,1|alpha:gpu0,alpha:gpu1\n');
  const three = await stack.cli(['run', '--gpus', '3', '--', 'true']);
  assert.equal(three.code, 201);
  assert.match(three.stderr, /no host has 3 devices matching/);
  const nine = await stack.cli(['run', '--gpus', '9', '--', 'true']);
  assert.equal(nine.code, 2);
});

test('two submitters racing for one device with --no-wait: exactly one wins, every round', async () => {
  await allFree();
  for (let round = 0; round < 10; round++) {
    const [a, b] = await Promise.all([
      stack.cli(['run', '--no-wait', '-d', 'alpha:gpu0', '--', 'sleep', '0.3'], { env: { RC_SUBMITTER: 'a' } }),
      stack.cli(['run', '--no-wait', '-d', 'alpha:gpu0', '--', 'sleep', '0.3'], { env: { RC_SUBMITTER: 'b' } }),
    ]);
    assert.deepEqual([a.code, b.code].sort(), [0, 202], `round ${round}: ${a.stderr} ${b.stderr}`);
  }
});

test('a job that forks a grandchild and exits: the grandchild dies with it and the device frees', async () => {
  await allFree();
  const r = await stack.cli(['run', '--', 'sh', '-c', 'sleep 331 & echo forked']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'forked\n');
  await stack.waitFor(() => processesMatching('sleep 331').length === 0, 'the grandchild to be gone');
  await allFree();
});

test("an admin token may kill anyone's job, and the kill is audited", async () => {
  await allFree();
  let id = '';
  const running = stack.cli(['run', '--', 'sh', '-c', 'echo "$RC_JOB_ID"; sleep 30'], {
    env: { RC_SUBMITTER: 'alice' },
    onSpawn: (c) =>
      c.stdout!.on('data', (d: Buffer) => {
        id ||= d.toString().trim();
      }),
  });
  await stack.waitFor(() => id !== '', 'the job to start');
  const r = await stack.cli(['kill', id], { env: { RC_TOKEN: stack.adminToken, RC_SUBMITTER: 'operator' } });
  assert.equal(r.code, 0, r.stderr);
  const done = await running;
  assert.match(done.stderr, /killed by operator \(admin token \d+ local admin \(npm start\)\)/);
  const { default: postgres } = await import('postgres');
  const sql = postgres(stack.dbUrl, { max: 1 });
  const rows = await sql<
    { actor: string; target: string; detail: Record<string, unknown> }[]
  >`select actor, target, detail from audit where action = 'job.kill' and target = ${id}`;
  await sql.end();
  assert.equal(rows.length, 1);
  assert.match(rows[0]!.actor, /^operator \(admin token \d+ local admin \(npm start\)\)$/);
  assert.deepEqual(
    [rows[0]!.target, rows[0]!.detail.submitter, rows[0]!.detail.owner, rows[0]!.detail.token, rows[0]!.detail.kind],
    [id, 'operator', 'alice', 'local admin (npm start)', 'admin'],
  );
});

test('an admin revokes a token: it stops working at once, its open sockets are cut, and the revocation is audited', async () => {
  const admin = { env: { RC_TOKEN: stack.adminToken } };
  const created = await stack.cli(['admin', 'token', 'create', 'leaver'], admin);
  assert.equal(created.code, 0, created.stderr);
  const token = created.stdout.trim().split('\n').pop()!;
  assert.match(token, /^rc_c_/);
  assert.equal((await stack.cli(['devices'], { env: { RC_TOKEN: token } })).code, 0, 'the new token works');
  const live = io(stack.controllerUrl, { auth: { token }, transports: ['websocket'], reconnection: false });
  await new Promise<void>((resolve, reject) => {
    live.on('connect', resolve);
    live.on('connect_error', reject);
  });
  const cut = new Promise<string>((resolve) => live.on('disconnect', (why) => resolve(why)));

  const list = await stack.cli(['admin', 'tokens'], admin);
  assert.equal(list.code, 0, list.stderr);
  assert.doesNotMatch(list.stdout, /rc_[cah]_/, 'no secret is ever listed');
  const line = list.stdout.split('\n').find((l) => /\sleaver\s+client\s/.test(l));
  assert.ok(line, list.stdout);
  const id = line.trim().split(/\s+/)[0]!;
  assert.match(line, /\s-$/, 'not revoked yet');

  const byClient = await stack.api('POST', `/api/admin/tokens/${id}/revoke`, {});
  assert.equal(byClient.status, 403, 'a client token cannot revoke');
  const revoked = await stack.cli(['admin', 'token', 'revoke', id], admin);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal(revoked.stdout, `token ${id} (client, leaver) revoked: it no longer works, and its open connections were cut\n`);
  // At once: not after the auth cache's few seconds (the token was used a moment ago).
  const after = await stack.cli(['devices'], { env: { RC_TOKEN: token } });
  assert.equal(after.code, 206);
  assert.match(after.stderr, /^rc: unauthorized: /);
  assert.equal(await cut, 'io server disconnect');
  live.close();
  assert.match((await stack.cli(['admin', 'tokens'], admin)).stdout, new RegExp(`^${id}\\s+leaver\\s+client\\s+anyone\\s+-\\s+\\S+ ago\\s+\\S+ ago$`, 'm'));
  assert.equal((await stack.cli(['admin', 'token', 'revoke', id], admin)).stdout, `token ${id} (client, leaver) was already revoked\n`);

  const { default: postgres } = await import('postgres');
  const sql = postgres(stack.dbUrl, { max: 1 });
  const rows = await sql<{ actor: string; target: string }[]>`select actor, target from audit where action = 'token.revoke'`;
  await sql.end();
  assert.deepEqual(
    rows.map((x) => [x.actor, x.target]),
    [['admin:local admin (npm start)', 'leaver']],
    'audited once, not again for the second revoke',
  );
});

test('token listing and revocation refuse bad ids, unknown ids, client tokens and the token making the request', async () => {
  const admin = { env: { RC_TOKEN: stack.adminToken } };
  assert.equal((await stack.api('GET', '/api/admin/tokens')).status, 403, 'a client token cannot list tokens');
  assert.equal((await stack.api('GET', '/api/admin/tokens', undefined, null)).status, 401);
  const extra = await stack.cli(['admin', 'tokens', 'all'], admin);
  assert.equal(extra.code, 2);
  assert.equal(extra.stderr, 'rc: usage: rc admin tokens\n');
  const notNumber = await stack.cli(['admin', 'token', 'revoke', 'alice'], admin);
  assert.equal(notNumber.code, 2);
  assert.match(notNumber.stderr, /rc admin token revoke <id>/);
  const badApi = await stack.api('POST', '/api/admin/tokens/1e3/revoke', {}, stack.adminToken);
  assert.equal(badApi.status, 400);
  assert.match((badApi.body as { error: { message: string } }).error.message, /token id: a number/);
  const unknown = await stack.cli(['admin', 'token', 'revoke', '999999'], admin);
  assert.equal(unknown.code, 208);
  assert.match(unknown.stderr, /no token 999999/);
  const mine = (await stack.api('GET', '/api/admin/tokens', undefined, stack.adminToken)).body as { tokens: { id: number; name: string; kind: string }[] };
  const self = mine.tokens.find((t) => t.kind === 'admin' && t.name === 'local admin (npm start)')!;
  const selfRevoke = await stack.cli(['admin', 'token', 'revoke', String(self.id)], admin);
  assert.equal(selfRevoke.code, 2);
  assert.match(selfRevoke.stderr, /the token this request uses/);
  assert.equal((await stack.cli(['devices'], admin)).code, 0, 'the admin token still works');
});
