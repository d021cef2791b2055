// rc run --tty end to end: the built CLI under a real pseudo-terminal (node-pty),
// a real controller and worker, the job under node-pty on the worker.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import * as pty from 'node-pty';
import postgres from 'postgres';
import { guardPtyEnd } from '../../worker/pty-end';
import { processesMatching, Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
let stack: Stack;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 2 }], controllerEnv: { RC_TTY_GRACE_S: '2' } });
});
after(async () => stack.stop());
/** Terminals a failed test left open: closed, so the next test finds the devices free. */
const open = new Set<Term>();
afterEach(() => {
  for (const t of open) t.kill('SIGKILL');
  open.clear();
});

interface Term {
  write(s: string): void;
  resize(cols: number, rows: number): void;
  kill(sig?: string): void;
  text(): string;
  until(re: RegExp, ms?: number): Promise<void>;
  exit: Promise<number>;
}

/** The built rc under a pseudo-terminal of our own, as a person's terminal would run it. */
function rcTty(args: string[], cols = 80, rows = 24): Term {
  const p = pty.spawn(process.execPath, [join(ROOT, 'dist', 'rc.cjs'), ...args], {
    name: 'xterm-256color',
    cols,
    rows,
    cwd: ROOT,
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME ?? '/root',
      RC_CONTROLLER: stack.controllerUrl,
      RC_TOKEN: stack.clientToken,
      RC_SUBMITTER: 'tester',
    },
  });
  // rc may exit right after its last output: read to the end as the worker reads its jobs' terminals.
  guardPtyEnd(p);
  let out = '';
  p.onData((d) => {
    out += d;
  });
  const exit = new Promise<number>((resolve) =>
    p.onExit(({ exitCode }) => {
      open.delete(term);
      resolve(exitCode);
    }),
  );
  const term: Term = {
    write: (s) => p.write(s),
    resize: (c, r) => p.resize(c, r),
    kill: (sig) => p.kill(sig),
    text: () => out,
    exit,
    until: async (re, ms = 15_000) => {
      const end = Date.now() + ms;
      while (!re.test(out)) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${re} in:\n${JSON.stringify(out.slice(-2000))}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
  open.add(term);
  return term;
}

const allFree = () => stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'every device to be free');

async function runningTtyJob(): Promise<string> {
  let id = '';
  await stack.waitFor(async () => {
    const r = await stack.api('GET', '/api/jobs?state=running');
    const job = (r.body as { jobs: { id: string; kind: string }[] }).jobs.find((j) => j.kind === 'tty');
    id = job?.id ?? '';
    return id !== '';
  }, 'a running tty job');
  return id;
}

test("a login shell by default: typed commands run, a resize reaches stty, exit 3 is rc's exit code", async () => {
  const t = rcTty(['run', '--tty']);
  await t.until(/\$ $|# $/m);
  t.write('echo hi-$((1+1)); shopt -q login_shell && echo login-yes\r');
  await t.until(/[\r\n]hi-2\r\n/);
  await t.until(/login-yes/);
  t.write('echo "[$TERM] [$RC_JOB_ID]"\r');
  await t.until(/\[xterm-256color\] \[j[0-9a-v]{10}\]/);
  t.write('stty size\r');
  await t.until(/[\r\n]24 80\r\n/);
  t.resize(100, 40);
  await new Promise((r) => setTimeout(r, 300));
  t.write('stty size\r');
  await t.until(/[\r\n]40 100\r\n/);
  t.write('exit 3\r');
  assert.equal(await t.exit, 3);
  await allFree();
});

test('the local terminal goes raw as ssh makes it: lines end \\r\\n, not \\r\\r\\n, and its settings come back after', async () => {
  // A shell of our own runs rc, so the terminal's settings can be read before and after.
  const rc = `${JSON.stringify(process.execPath)} ${JSON.stringify(join(ROOT, 'dist', 'rc.cjs'))}`;
  const p = pty.spawn('/bin/sh', ['-c', `stty -g; ${rc} run --tty -- sh -c 'echo one; echo two; exit 6'; echo "rc=$?"; stty -g`], {
    name: 'xterm-256color',
    cols: 80,
    rows: 24,
    cwd: ROOT,
    env: { PATH: process.env.PATH!, RC_CONTROLLER: stack.controllerUrl, RC_TOKEN: stack.clientToken, RC_SUBMITTER: 'tester' },
  });
  guardPtyEnd(p);
  let out = '';
  p.onData((d) => {
    out += d;
  });
  await new Promise<void>((resolve) => p.onExit(() => resolve()));
  const [before, after] = out.split('\r\n').filter((l) => /^[0-9a-f]+(:[0-9a-f]+)+$/.test(l));
  assert.match(out, /\r\none\r\ntwo\r\nrc=6\r\n/, JSON.stringify(out));
  assert.ok(before && before === after, `the terminal's settings before and after rc: ${before} / ${after}`);
});

test('Ctrl-C reaches the program, not rc: the shell survives it; Ctrl-D ends the shell', async () => {
  const t = rcTty(['run', '--tty', '--', 'sh']);
  await t.until(/\$ $|# $/m);
  t.write('sleep 421\r');
  await stack.waitFor(() => processesMatching('sleep 421').length === 1, 'the sleep to run');
  t.write('\x03');
  await stack.waitFor(() => processesMatching('sleep 421').length === 0, 'Ctrl-C to end the sleep');
  t.write('echo alive-$((2+3))\r');
  await t.until(/[\r\n]alive-5\r\n/);
  t.write('\x04');
  assert.equal(await t.exit, 0);
});

test('rc kill ends a tty job; its children die with it; rc logs says the output is not stored', async () => {
  await allFree();
  const t = rcTty(['run', '--tty', '--', 'sh']);
  await t.until(/\$ $|# $/m);
  // A background job (a process group of its own) and one that left the session.
  t.write('sleep 431 & setsid sleep 432 & sleep 433\r');
  await stack.waitFor(() => ['sleep 431', 'sleep 432', 'sleep 433'].every((m) => processesMatching(m).length === 1), 'the sleeps to run');
  const id = await runningTtyJob();
  const killed = await stack.cli(['kill', id]);
  assert.equal(killed.code, 0, killed.stderr);
  const code = await t.exit;
  // An interactive shell ignores SIGTERM: the SIGKILL after RC_KILL_GRACE_S ends it.
  assert.ok(code === 143 || code === 137, `exit ${code}: ${t.text().slice(-500)}`);
  assert.match(t.text(), new RegExp(`job ${id} was killed: killed by tester \\(token \\d+ local client \\(npm start\\)\\)`));
  await stack.waitFor(() => ['sleep 431', 'sleep 432', 'sleep 433'].every((m) => processesMatching(m).length === 0), 'no process left behind');
  const job = await stack.job(id);
  assert.equal(job.state, 'killed');
  const logs = await stack.cli(['logs', id]);
  assert.equal(logs.code, 0);
  assert.equal(logs.stdout, '');
  assert.match(logs.stderr, new RegExp(`job ${id} was an interactive terminal \\(--tty\\); its output is not stored`));
  await allFree();
});

test('what a shell leaves running when it exits is killed too', async () => {
  const t = rcTty(['run', '--tty', '--', 'sh']);
  await t.until(/\$ $|# $/m);
  t.write('sleep 441 & setsid sleep 442 & sleep 0.3; exit 5\r');
  assert.equal(await t.exit, 5);
  await stack.waitFor(() => processesMatching('sleep 441').length === 0 && processesMatching('sleep 442').length === 0, 'no process left behind');
});

test('without a terminal on stdin it still works: stdin is sent as typed, its end is Ctrl-D', async () => {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'rc.cjs'), 'run', '--tty', '--', 'sh'], {
    env: { PATH: process.env.PATH, RC_CONTROLLER: stack.controllerUrl, RC_TOKEN: stack.clientToken, RC_SUBMITTER: 'tester' } as unknown as NodeJS.ProcessEnv,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stdin.end('echo piped-$((3*3))\nexit 4\n');
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 4);
  assert.match(out, /piped-9\r\n/);
});

test('the watchdogs apply: --idle-timeout kills a silent terminal (exit 204)', async () => {
  const t = rcTty(['run', '--tty', '--idle-timeout', '2', '--', 'sh', '-c', 'echo started; sleep 60']);
  await t.until(/started/);
  assert.equal(await t.exit, 204);
  assert.match(t.text(), /idle: no output for 2s/);
});

test('a terminal nobody is attached to ends after RC_TTY_GRACE_S and frees its device', async () => {
  await allFree();
  const t = rcTty(['run', '--tty', '--', 'sh']);
  await t.until(/\$ $|# $/m);
  const id = await runningTtyJob();
  t.kill('SIGKILL');
  await stack.waitFor(async () => (await stack.job(id)).state === 'killed', 'the job to end', 15_000);
  assert.match((await stack.job(id)).reason ?? '', /^closed: nobody was attached to the terminal for 2s/);
  await allFree();
});

test('a busy fleet queues a terminal with the same notice as rc run', async () => {
  await allFree();
  const hogs = [stack.cli(['run', '--', 'sleep', '2']), stack.cli(['run', '--', 'sleep', '2'])];
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'busy'), 'both devices busy');
  const t = rcTty(['run', '--tty', '--', 'sh', '-c', 'echo got-a-device; exit 0']);
  await t.until(/rc: waiting for a device: job j[0-9a-v]{10} is queued \(\d+ ahead of it\)/);
  await t.until(/got-a-device/, 20_000);
  assert.equal(await t.exit, 0);
  await Promise.all(hogs);
});

test('the terminal socket refuses other sites and unauthenticated clients', { timeout: 30_000 }, async () => {
  const { io } = await import('socket.io-client');
  const tryConnect = (opts: Record<string, unknown>) =>
    new Promise<string>((resolve) => {
      const s = io(`${stack.controllerUrl}/tty`, { transports: ['websocket'], reconnection: false, ...opts });
      s.on('connect', () => {
        s.close();
        resolve('connected');
      });
      s.on('connect_error', (e) => {
        s.close();
        resolve(e.message);
      });
    });
  const login = await fetch(`${stack.controllerUrl}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: stack.clientToken }),
  });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  assert.match(
    await tryConnect({ extraHeaders: { cookie, origin: 'https://evil.example' } }),
    /^forbidden: the request came from https:\/\/evil\.example, not from the dashboard; sockets with the session cookie open only from the dashboard's own pages$/,
  );
  assert.equal(await tryConnect({ extraHeaders: { cookie, origin: stack.controllerUrl } }), 'connected');
  assert.match(await tryConnect({}), /^unauthorized/);
  assert.match(await tryConnect({ auth: { token: 'rc_c_nope' } }), /^unauthorized/);
});

test('flow control: a client that does not acknowledge holds the program back, and acknowledging lets it finish', { timeout: 120_000 }, async (t) => {
  await allFree();
  const { io } = await import('socket.io-client');
  const s = io(`${stack.controllerUrl}/tty`, { auth: { token: stack.clientToken }, transports: ['websocket'] });
  // Closed however the test ends: an open socket would keep this file's process alive.
  t.after(() => s.close());
  let got = 0;
  let tail = '';
  let acking = false;
  s.on('output', (d: Buffer) => {
    got += d.length;
    tail = (tail + d.toString('latin1')).slice(-100);
    if (acking) s.emit('ack', d.length);
  });
  const exit = new Promise<{ state: string; exitCode: number | null }>((resolve) => s.on('exit', resolve));
  // In a shell, as a person would run it: the shell keeps the terminal open after the flood.
  const started = new Promise((resolve) => s.on('started', resolve));
  s.emit('open', { argv: ['sh'], submitter: 'tester', cols: 80, rows: 24 });
  await started;
  s.emit('input', 'yes | head -c 20000000; echo done-$((6*7))\r');
  // No ack: the controller pauses the worker's terminal past its high-water mark.
  await stack.waitFor(() => got > 100_000, 'some output');
  let last = -1;
  await stack.waitFor(
    async () => {
      const before = got;
      await new Promise((r) => setTimeout(r, 700));
      last = got;
      return got === before;
    },
    'the output to stall',
    20_000,
  );
  assert.ok(last < 2 * 1024 * 1024, `stalled after ${last} bytes: the high-water mark plus the worker's window, not the whole 20M`);
  const running = (await stack.api('GET', '/api/jobs?state=running')).body as { jobs: { kind: string }[] };
  assert.equal(running.jobs.filter((j) => j.kind === 'tty').length, 1, 'the program is held back, not ended');
  // Acknowledging what arrived lets it run to the end.
  acking = true;
  s.emit('ack', got);
  await stack.waitFor(() => /[\r\n]done-42\r\n/.test(tail), 'the end of the output', 60_000);
  assert.ok(got > 30_000_000, `all of it arrived (${got} bytes: 10M lines of y, \\r\\n after each)`);
  s.emit('input', 'exit 7\r');
  const e = await exit;
  s.close();
  assert.deepEqual([e.state, e.exitCode], ['failed', 7]);
});

test('rc attach goes back to a running terminal: the recent screen is replayed and keys reach it again', async () => {
  await allFree();
  const first = rcTty(['run', '--tty', '--', 'sh']);
  await first.until(/\$ $|# $/m);
  first.write('echo before-$((4*4))\r');
  await first.until(/[\r\n]before-16\r\n/);
  const id = await runningTtyJob();
  first.kill('SIGKILL');
  const again = rcTty(['attach', id]);
  await again.until(/[\r\n]before-16\r\n/);
  again.write('echo after-$((5*5)); exit 9\r');
  await again.until(/[\r\n]after-25\r\n/);
  assert.equal(await again.exit, 9);
  assert.equal((await stack.job(id)).exitCode, 9);
});

/** A terminal client on the /tty socket, as the dashboard's page or a second `rc attach` would be one; it acknowledges what it gets. */
async function ttyClient(token: string) {
  const { io } = await import('socket.io-client');
  const s = io(`${stack.controllerUrl}/tty`, { auth: { token }, transports: ['websocket'], reconnection: false });
  const c = {
    socket: s,
    screen: '',
    errors: [] as { code: string; message: string }[],
    exit: null as { state: string; exitCode: number | null } | null,
    started: false,
    async until(re: RegExp, ms = 15_000) {
      const end = Date.now() + ms;
      while (!re.test(c.screen)) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${re} in:\n${JSON.stringify(c.screen.slice(-2000))}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
  s.on('output', (d: Buffer) => {
    c.screen += d.toString();
    s.emit('ack', d.length);
  });
  s.on('started', () => {
    c.started = true;
  });
  s.on('error', (e: { code: string; message: string }) => c.errors.push(e));
  s.on('exit', (e: { state: string; exitCode: number | null }) => {
    c.exit = e;
  });
  await new Promise<void>((resolve, reject) => {
    s.on('connect', resolve);
    s.on('connect_error', reject);
  });
  return c;
}

test('a second client of the same token attaches beside rc run --tty: both see the output and type, the latest to open, type or resize sets the size, the exit reaches both', async (t) => {
  await allFree();
  const cli = rcTty(['run', '--tty', '--', 'sh'], 80, 24);
  await cli.until(/\$ $|# $/m);
  cli.write('echo one-$((1+1))\r');
  await cli.until(/[\r\n]one-2\r\n/);
  const id = await runningTtyJob();

  const second = await ttyClient(stack.clientToken);
  t.after(() => second.socket.close());
  second.socket.emit('open', { jobId: id, cols: 120, rows: 40 });
  // The screen so far is replayed to it.
  await second.until(/one-2/);
  // It types, at its own size (the latest to open); the CLI sees the answer.
  second.socket.emit('input', 'echo two-$((2+2)); stty size\r');
  await second.until(/two-4[\s\S]*40 120/);
  await cli.until(/[\r\n]two-4\r\n40 120\r\n/);
  // The CLI keeps the terminal: its keys run, at its size again (the latest to type), and both see the answer.
  cli.write('echo three-$((3+3)); stty size\r');
  await cli.until(/[\r\n]three-6\r\n24 80\r\n/);
  await second.until(/three-6[\s\S]*24 80/);
  // A resize is the latest too.
  cli.resize(100, 30);
  await new Promise((r) => setTimeout(r, 300));
  cli.write('stty size\r');
  await cli.until(/[\r\n]30 100\r\n/);
  await second.until(/30 100/);
  assert.doesNotMatch(cli.text(), /detach/, 'the CLI was never detached');
  assert.deepEqual(second.errors, []);

  cli.write('exit 3\r');
  assert.equal(await cli.exit, 3);
  await stack.waitFor(() => second.exit !== null, 'the exit to reach the second client');
  assert.deepEqual([second.exit!.state, second.exit!.exitCode], ['failed', 3]);
});

test("another token's client is refused, naming the holder, while the terminal is attached; it may attach when nobody is, and the owner coming back takes it back", async (t) => {
  await allFree();
  const cli = rcTty(['run', '--tty', '--', 'sh']);
  await cli.until(/\$ $|# $/m);
  const id = await runningTtyJob();

  const admin = await ttyClient(stack.adminToken);
  t.after(() => admin.socket.close());
  admin.socket.emit('open', { jobId: id, cols: 80, rows: 24 });
  await stack.waitFor(() => admin.errors.length > 0, 'the refusal');
  assert.equal(admin.errors[0]!.code, 'terminal_busy');
  assert.match(
    admin.errors[0]!.message,
    new RegExp(
      `^the terminal ${id} is in use by client token "local client \\(npm start\\)" through rc since \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ; it can be opened here once they leave it \\(or rc kill ${id} ends it\\)$`,
    ),
  );
  assert.equal(admin.started, false);
  assert.equal(admin.screen, '', 'nothing of the terminal reached it');
  // The owner's terminal goes on, undisturbed.
  cli.write('echo still-$((5+5))\r');
  await cli.until(/[\r\n]still-10\r\n/);
  admin.socket.close();

  // Nobody attached (rc killed; the grace period keeps the terminal): an admin may attach, once the controller saw rc go.
  const admin2 = await ttyClient(stack.adminToken);
  t.after(() => admin2.socket.close());
  cli.kill('SIGKILL');
  await cli.exit;
  await stack.waitFor(async () => {
    const refused = admin2.errors.length;
    admin2.socket.emit('open', { jobId: id, cols: 80, rows: 24 });
    await stack.waitFor(() => admin2.started || admin2.errors.length > refused, 'an answer to the open');
    return admin2.started;
  }, 'the admin to attach');
  assert.ok(
    admin2.errors.every((e) => e.code === 'terminal_busy'),
    JSON.stringify(admin2.errors),
  );
  await admin2.until(/still-10/);
  // Its owner comes back: the admin's client is detached, the owner has the terminal.
  const owner = await ttyClient(stack.clientToken);
  t.after(() => owner.socket.close());
  owner.socket.emit('open', { jobId: id, cols: 80, rows: 24 });
  await owner.until(/still-10/);
  await stack.waitFor(() => admin2.errors.some((e) => e.code === 'detached'), 'the admin to be detached');
  assert.match(admin2.errors.find((e) => e.code === 'detached')!.message, new RegExp(`^the terminal ${id} was taken back by its owner`));
  // The owner holds it again: another admin's client is refused.
  const admin3 = await ttyClient(stack.adminToken);
  t.after(() => admin3.socket.close());
  admin3.socket.emit('open', { jobId: id, cols: 80, rows: 24 });
  await stack.waitFor(() => admin3.errors.length > 0, 'the refusal');
  assert.equal(admin3.errors[0]!.code, 'terminal_busy');
  const db = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  try {
    const rows = await db<{ who: string }[]>`select who from tty_viewers where job_id = ${id}`;
    assert.deepEqual(
      rows.map((r) => r.who),
      ['client token "local client (npm start)" through rc'],
      'the row says the owner holds it',
    );
  } finally {
    await db.end();
  }
  owner.socket.emit('input', 'exit 4\r');
  await stack.waitFor(() => owner.exit !== null, 'the exit');
  assert.equal(owner.exit!.exitCode, 4);
  assert.equal(admin2.exit, null, 'the detached client hears nothing more');
});
