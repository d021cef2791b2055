// Who did it, recorded truthfully: kills, releases, extends and copies name the
// token as well as the claimed submitter (the audit log, a job's reason). A client
// token bound to a name or a prefix (rc admin token create --submitter) acts only
// as the names it is bound to; unbound tokens keep the cooperative rule.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Stack, type CliResult } from '../helpers/stack';

let stack: Stack;
const local = mkdtempSync(join(tmpdir(), 'rc-tokens-'));
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 2 }] });
});
after(async () => stack.stop());

const admin = () => ({ RC_TOKEN: stack.adminToken });
const allFree = () => stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'every device to be free');

/** rc admin token create <args>: the new token's id and secret. */
async function createToken(args: string[]): Promise<{ id: number; secret: string; stdout: string }> {
  const r = await stack.cli(['admin', 'token', 'create', ...args], { env: admin() });
  assert.equal(r.code, 0, r.stderr);
  const m = /^client token (\d+) for /.exec(r.stdout);
  assert.ok(m, r.stdout);
  return { id: Number(m[1]), secret: r.stdout.trim().split('\n').pop()!, stdout: r.stdout };
}

/** Starts `rc <args>` and resolves once it printed its first stdout line. */
async function startCli(args: string[], env: Record<string, string>): Promise<{ line: string; child: ChildProcess; done: Promise<CliResult> }> {
  let child: ChildProcess | null = null;
  let out = '';
  const done = stack.cli(args, {
    env,
    timeoutMs: 60_000,
    onSpawn: (c) => {
      child = c;
      c.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
      });
    },
  });
  await stack.waitFor(() => out.includes('\n'), `rc ${args.join(' ')} to print its first line`);
  return { line: out.split('\n')[0]!, child: child!, done };
}
const startJob = async (env: Record<string, string>) => {
  const s = await startCli(['run', '-d', 'alpha:gpu0', '--', 'sh', '-c', 'echo "$RC_JOB_ID"; sleep 60'], env);
  return { id: s.line, done: s.done };
};
const startHold = async (env: Record<string, string>, dev = 'alpha:gpu1') => {
  const s = await startCli(['hold', '-d', dev, '--ttl', '10m'], env);
  return { id: /^hold (j\w+)/.exec(s.line)![1]!, done: s.done };
};

async function auditRows(actions: string[]): Promise<{ actor: string; action: string; target: string; detail: Record<string, unknown> }[]> {
  const { default: postgres } = await import('postgres');
  const sql = postgres(stack.dbUrl, { max: 1 });
  try {
    return await sql`select actor, action, target, detail from audit where action = any(${actions}) order by id`;
  } finally {
    await sql.end();
  }
}

test('kills, releases, extends and copies are audited with the token (id and name) and the claimed submitter; reasons name the token', async () => {
  await allFree();
  const agent = await createToken(['agent-a']);
  const env = { RC_TOKEN: agent.secret, RC_SUBMITTER: 'alice' };
  const who = `alice (token ${agent.id} agent-a)`;

  const job = await startJob(env);
  const kill = await stack.cli(['kill', job.id], { env });
  assert.equal(kill.code, 0, kill.stderr);
  assert.match((await job.done).stderr, new RegExp(`job ${job.id} was killed: killed by alice \\(token ${agent.id} agent-a\\)`));
  assert.equal((await stack.job(job.id)).reason, `killed by ${who}`);

  const hold = await startHold(env);
  assert.equal((await stack.cli(['hold', 'extend', hold.id, '--ttl', '20m'], { env })).code, 0);
  writeFileSync(join(local, 'a.txt'), 'under the hold');
  const up = await stack.cli(['cp', join(local, 'a.txt'), 'alpha:gpu1:/workspace/a.txt'], { env });
  assert.equal(up.code, 0, up.stderr);
  const down = await stack.cli(['cp', 'alpha:gpu1:/workspace/a.txt', join(local, 'b.txt')], { env });
  assert.equal(down.code, 0, down.stderr);
  assert.equal(readFileSync(join(local, 'b.txt'), 'utf8'), 'under the hold');
  assert.equal((await stack.cli(['release', hold.id], { env })).code, 0);
  assert.match((await hold.done).stderr, new RegExp(`ended: released by alice \\(token ${agent.id} agent-a\\)`));
  assert.equal((await stack.job(hold.id)).reason, `released by ${who}`);

  // A copy to a free device, under its own short lease, is audited the same way.
  const free = await stack.cli(['cp', join(local, 'a.txt'), 'alpha:gpu0:/workspace/free.txt'], { env });
  assert.equal(free.code, 0, free.stderr);

  const rows = (await auditRows(['job.kill', 'hold.release', 'hold.extend', 'cp.up', 'cp.down'])).filter((r) => r.detail.tokenId === agent.id);
  assert.deepEqual(
    rows.map((r) => [r.actor, r.action, r.target]),
    [
      [who, 'job.kill', job.id],
      [who, 'hold.extend', hold.id],
      [who, 'cp.up', 'alpha:gpu1:/workspace/a.txt'],
      [who, 'cp.down', 'alpha:gpu1:/workspace/a.txt'],
      [who, 'hold.release', hold.id],
      [who, 'cp.up', 'alpha:gpu0:/workspace/free.txt'],
    ],
  );
  for (const r of rows) {
    assert.equal(r.detail.token, 'agent-a');
    assert.equal(r.detail.submitter, 'alice');
  }
  assert.equal(rows[0]!.detail.owner, 'alice');
  assert.equal(rows[1]!.detail.ttl, '20m');
  assert.equal(rows[2]!.detail.lease, hold.id, 'the copy went under the hold');
  assert.equal(rows[2]!.detail.bytes, 14);
  assert.notEqual(rows[5]!.detail.lease, hold.id);
  await allFree();
});

test('a token bound to a prefix acts only as names under it: rc run, rc hold, rc run --tty, kill, release, extend and rc cp', async () => {
  await allFree();
  const bound = await createToken(['--name', 'agent-b', '--submitter', 'claude/']);
  assert.match(bound.stdout, /^client token \d+ for agent-b, acting only as claude\/… \(shown once/);
  const ok = { RC_TOKEN: bound.secret, RC_SUBMITTER: 'claude/box/session-1' };
  const as = (name: string) => ({ RC_TOKEN: bound.secret, RC_SUBMITTER: name });
  const why = (name: string) =>
    new RegExp(`^rc: forbidden: this token acts only as claude/…, not ${name}; set RC_SUBMITTER to a name under claude/ \\(claude/<anything>\\)\n$`);
  const forbidden = (r: CliResult, name = 'bob') => {
    assert.equal(r.code, 206, r.stderr);
    assert.match(r.stderr, why(name));
  };

  const run = await stack.cli(['run', '--', 'echo', 'hi'], { env: ok });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, 'hi\n');
  forbidden(await stack.cli(['run', '--', 'echo', 'hi'], { env: as('bob') }));
  forbidden(await stack.cli(['run', '--', 'echo', 'hi'], { env: as('claude') }), 'claude');
  forbidden(await stack.cli(['hold', '-d', 'alpha:gpu1', '--ttl', '1m'], { env: as('bob') }));
  forbidden(await stack.cli(['run', '--tty', '--', 'true'], { env: as('bob') }));
  writeFileSync(join(local, 'c.txt'), 'c');
  forbidden(await stack.cli(['cp', join(local, 'c.txt'), 'alpha:gpu1:/workspace/c.txt'], { env: as('bob') }));
  forbidden(await stack.cli(['cp', 'alpha:gpu1:/workspace/c.txt', join(local, 'd.txt')], { env: as('bob') }));
  assert.equal(((await stack.api('GET', '/api/jobs?submitter=bob')).body as { jobs: unknown[] }).jobs.length, 0, 'nothing was submitted as bob');

  // bob's job and hold, taken with the shared client token: the bound token may not claim bob to stop them.
  const bobs = await startJob({ RC_SUBMITTER: 'bob' });
  const bobHold = await startHold({ RC_SUBMITTER: 'bob' });
  forbidden(await stack.cli(['kill', bobs.id], { env: as('bob') }));
  forbidden(await stack.cli(['release', bobHold.id], { env: as('bob') }));
  forbidden(await stack.cli(['hold', 'extend', bobHold.id, '--ttl', '1h'], { env: as('bob') }));
  // Claiming its own name, it is just someone else: the cooperative rule's answer.
  assert.equal((await stack.cli(['kill', bobs.id], { env: ok })).code, 209);
  assert.equal((await stack.job(bobs.id)).state, 'running');
  assert.equal((await stack.job(bobHold.id)).state, 'running');
  await stack.cli(['kill', bobs.id], { env: { RC_SUBMITTER: 'bob' } });
  await stack.cli(['release', bobHold.id], { env: { RC_SUBMITTER: 'bob' } });
  await Promise.all([bobs.done, bobHold.done]);

  // Under its prefix everything works.
  const mine = await startHold(ok);
  assert.equal((await stack.cli(['hold', 'extend', mine.id, '--ttl', '1h'], { env: ok })).code, 0);
  assert.equal((await stack.cli(['cp', join(local, 'c.txt'), 'alpha:gpu1:/workspace/c.txt'], { env: ok })).code, 0);
  assert.equal((await stack.cli(['cp', 'alpha:gpu1:/workspace/c.txt', join(local, 'd.txt')], { env: ok })).code, 0);
  const rel = await stack.cli(['release', mine.id], { env: ok });
  assert.equal(rel.code, 0, rel.stderr);
  await mine.done;
  assert.equal((await stack.job(mine.id)).reason, `released by claude/box/session-1 (token ${bound.id} agent-b)`);
  const tty = await stack.cli(['run', '--tty', '--', 'sh', '-c', 'echo tty-ok'], { env: ok });
  assert.equal(tty.code, 0, tty.stderr);
  assert.match(tty.stdout, /tty-ok/);
  await allFree();
});

test('a token bound to one name acts only as that name; dashboard terminals take the bound name, <prefix>web, or web:<token name>', async () => {
  await allFree();
  const exact = await createToken(['alice-only', '--submitter', 'alice']);
  assert.match(exact.stdout, /^client token \d+ for alice-only, acting only as alice \(shown once/);
  const prefix = await createToken(['agent-c', '--submitter', 'claude/']);
  const alice = await stack.cli(['run', '--', 'true'], { env: { RC_TOKEN: exact.secret, RC_SUBMITTER: 'alice' } });
  assert.equal(alice.code, 0, alice.stderr);
  const other = await stack.cli(['run', '--', 'true'], { env: { RC_TOKEN: exact.secret, RC_SUBMITTER: 'alice2' } });
  assert.equal(other.code, 206);
  assert.equal(other.stderr, 'rc: forbidden: this token acts only as alice, not alice2; set RC_SUBMITTER=alice\n');

  const { io } = await import('socket.io-client');
  const webTerminal = async (token: string): Promise<string> => {
    const login = await fetch(`${stack.controllerUrl}/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
    assert.equal(login.status, 200);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const s = io(`${stack.controllerUrl}/tty`, { transports: ['websocket'], reconnection: false, extraHeaders: { cookie, origin: stack.controllerUrl } });
    try {
      const jobId = await new Promise<string>((resolve, reject) => {
        s.on('connect_error', reject);
        s.on('error', (e: { code: string; message: string }) => reject(new Error(`${e.code}: ${e.message}`)));
        s.on('queued', (e: { jobId: string }) => resolve(e.jobId));
        // The submitter field is ignored for the cookie: the controller picks the name.
        s.on('connect', () => s.emit('open', { argv: ['sleep', '30'], device: 'alpha:gpu0', submitter: 'someone-else', cols: 80, rows: 24 }));
      });
      const job = ((await stack.api('GET', `/api/jobs/${jobId}`)).body as { job: { submitter: string } }).job;
      await stack.cli(['kill', jobId], { env: admin() });
      await stack.waitFor(async () => ['killed', 'cancelled'].includes((await stack.job(jobId)).state), 'the web terminal to end');
      return job.submitter;
    } finally {
      s.close();
    }
  };
  assert.equal(await webTerminal(exact.secret), 'alice');
  assert.equal(await webTerminal(prefix.secret), 'claude/web');
  assert.equal(await webTerminal(stack.clientToken), 'web:local client (npm start)');
  await allFree();
});

test("rc admin tokens and GET /api/admin/tokens show each token's binding, never a secret", async () => {
  await createToken(['listed-prefix', '--submitter', 'ci/']);
  await createToken(['listed-exact', '--submitter', 'ci-bot']);
  const list = await stack.cli(['admin', 'tokens'], { env: admin() });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^ID\s+NAME\s+KIND\s+ACTS AS\s+HOST\s+CREATED\s+REVOKED$/m);
  assert.match(list.stdout, /^\d+\s+listed-prefix\s+client\s+ci\/…\s+-\s+/m);
  assert.match(list.stdout, /^\d+\s+listed-exact\s+client\s+ci-bot\s+-\s+/m);
  assert.match(list.stdout, /^\d+\s+local client \(npm start\)\s+client\s+anyone\s+-\s+/m);
  assert.match(list.stdout, /^\d+\s+local admin \(npm start\)\s+admin\s+anyone\s+-\s+/m);
  assert.doesNotMatch(list.stdout, /rc_[cah]_/);
  const api = await stack.api('GET', '/api/admin/tokens', undefined, stack.adminToken);
  const tokens = (api.body as { tokens: { name: string; submitter: string | null }[] }).tokens;
  assert.equal(tokens.find((t) => t.name === 'listed-prefix')!.submitter, 'ci/');
  assert.equal(tokens.find((t) => t.name === 'listed-exact')!.submitter, 'ci-bot');
  assert.equal(tokens.find((t) => t.name === 'local client (npm start)')!.submitter, null);
  assert.doesNotMatch(JSON.stringify(api.body), /rc_[cah]_|"hash"/);
  const created = await stack.api('POST', '/api/admin/tokens', { name: 'via-api', submitter: ' team/ ' }, stack.adminToken);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal((created.body as { submitter: string }).submitter, 'team/');
});

test('bound tokens: a bad binding, an admin binding and a client token are refused, and no token is made', async () => {
  const count = async () => ((await stack.api('GET', '/api/admin/tokens', undefined, stack.adminToken)).body as { tokens: unknown[] }).tokens.length;
  const before = await count();
  const byClient = await stack.api('POST', '/api/admin/tokens', { name: 'sneaky', submitter: 'claude/' });
  assert.equal(byClient.status, 403);
  assert.equal((await stack.api('POST', '/api/admin/tokens', { name: 'sneaky', submitter: 'claude/' }, null)).status, 401);
  const bound = await createToken(['bound-maker', '--submitter', 'claude/']);
  assert.equal((await stack.api('POST', '/api/admin/tokens', { name: 'sneaky' }, bound.secret)).status, 403, 'a bound client token cannot make tokens either');
  const cli = (args: string[]) => stack.cli(['admin', 'token', 'create', ...args], { env: admin() });
  for (const bad of ['', '   ', 'claude/\x1b', 'a\u202eb', 'x'.repeat(201)]) {
    const r = await cli(['sneaky', '--submitter', bad]);
    assert.equal(r.code, 2, `${JSON.stringify(bad)}: ${r.stderr}`);
    assert.match(r.stderr, /^rc: bad_request: submitter: /);
  }
  const adminBound = await cli(['sneaky', '--admin', '--submitter', 'claude/']);
  assert.equal(adminBound.code, 2);
  assert.match(adminBound.stderr, /^rc: bad_request: submitter: an admin token acts as anyone/);
  const noValue = await cli(['sneaky', '--submitter']);
  assert.equal(noValue.code, 2);
  assert.match(noValue.stderr, /--submitter needs a value/);
  for (const submitter of [5, '', ['claude/']]) {
    const r = await stack.api('POST', '/api/admin/tokens', { name: 'sneaky', submitter }, stack.adminToken);
    assert.equal(r.status, 400, JSON.stringify(submitter));
  }
  assert.equal(await count(), before + 1, 'only bound-maker was made');
});
