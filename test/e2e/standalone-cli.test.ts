// The CLI on another machine: `curl <controller>/install/rc.sh | sh` from a
// running controller into a temporary folder, then the standalone rc (one
// executable, compiled by Bun) for what people and agents do most: output and
// exit codes, stdin, refusals, Ctrl-C, and --tty under a real pseudo-terminal.
// The Node CLI's fallback (RC_CLI=node) is installed and run too.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as pty from 'node-pty';
import { guardPtyEnd } from '../../worker/pty-end';
import { processesMatching, Stack } from '../helpers/stack';

const PLATFORM = `${process.platform}-${process.arch}`;
let stack: Stack;
let home: string;
let rc: string;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 2 }] });
  home = mkdtempSync(join(tmpdir(), 'rc-cli-home-'));
  rc = join(home, '.local', 'bin', 'rc');
});
after(async () => {
  await stack.stop();
  rmSync(home, { recursive: true, force: true });
});

/** The install script as a user runs it: curl piped into sh, with this HOME and PATH. */
function install(args: string[] = [], env: Record<string, string> = {}, script?: string) {
  const fetchScript = script === undefined ? `curl -fsSL ${stack.controllerUrl}/install/rc.sh | ` : '';
  return spawnSync('/bin/sh', ['-c', `${fetchScript}sh -s -- "$@"`, 'sh', ...args], {
    encoding: 'utf8',
    input: script,
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, ...env } as unknown as NodeJS.ProcessEnv,
    timeout: 60_000,
  });
}

/**
 * After install() (spawnSync: this process's event loop stopped for seconds), one turn of timers before the
 * next fetch: fetch's pool then drops the keep-alive connections the controller closed meanwhile (idle past
 * its 5 s) instead of sending on one ("other side closed", seen in CI when the install took 7 s).
 */
const afterBlocking = () => new Promise((r) => setTimeout(r, 100));

const allFree = () => stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'every device to be free');

test('the install script puts the standalone rc in ~/.local/bin and prints the setup lines for this controller', () => {
  const r = install();
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`rc-install: rc \\S+ installed: ${rc.replace(/[.]/g, '\\.')} \\(standalone, ${PLATFORM}\\)`));
  assert.match(r.stdout, new RegExp(`is not on your PATH; add it: export PATH="${join(home, '.local', 'bin')}:\\$PATH"`));
  assert.ok(r.stdout.includes(`export RC_CONTROLLER=${stack.controllerUrl}\n`), r.stdout);
  assert.match(r.stdout, /export RC_TOKEN=<client token> +# ask the operator\n/);
  assert.match(r.stdout, /export RC_SUBMITTER="claude\/\$\(hostname\)\/session-\$\$"/);
  assert.ok(!/npx/.test(r.stdout), 'never npx outside a checkout');
  // One executable: not a script that needs node.
  assert.equal(readFileSync(rc).subarray(0, 4).toString('latin1'), '\x7fELF');
  assert.ok(statSync(rc).mode & 0o100, 'executable');
  const v = spawnSync(rc, ['--version'], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } as unknown as NodeJS.ProcessEnv });
  assert.equal(v.status, 0);
  const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
  assert.equal(v.stdout, `rc ${version} (standalone, ${PLATFORM}; from an rc ${version} controller)\n`);
  // Run again, it updates in place.
  const again = install();
  assert.equal(again.status, 0, again.stderr);
  assert.equal(spawnSync(rc, ['--version']).status, 0);
});

test('a download that does not match its SHA-256 is refused and installs nothing', async () => {
  await afterBlocking();
  const res = await fetch(`${stack.controllerUrl}/install/rc.sh`);
  const script = (await res.text()).replace(/STANDALONE='([a-z0-9-]+):[0-9a-f]{64}'/, `STANDALONE='$1:${'0'.repeat(64)}'`);
  const dir = join(home, 'tampered');
  const r = install([dir], {}, script);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /rc-install: rc-\S+\.gz does not match its SHA-256 \(got [0-9a-f]{64}, want 0{64}\): not installed\n/);
  assert.ok(!existsSync(join(dir, 'rc')));
});

test('the files it serves: hashes in the header, unknown names are not_found, the script takes no options it does not know', async () => {
  await afterBlocking();
  const script = await (await fetch(`${stack.controllerUrl}/install/rc.sh`)).text();
  const sum = /STANDALONE='[a-z0-9-]+:([0-9a-f]{64})'/.exec(script)?.[1];
  const head = await fetch(`${stack.controllerUrl}/api/cli/rc-${PLATFORM}.gz`);
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-type'), 'application/gzip');
  assert.equal(head.headers.get('x-rc-sha256'), sum);
  await head.body?.cancel();
  for (const name of ['nope', '..%2Fpackage.json', 'rc-linux-x64', '%00']) {
    const r = await fetch(`${stack.controllerUrl}/api/cli/${name}`);
    assert.ok(r.status === 404 || r.status === 400, `${name}: ${r.status}`);
    const body = (await r.json()) as { error: { code: string; message: string } };
    assert.ok(['not_found', 'bad_request'].includes(body.error.code), name);
  }
  const nf = (await (await fetch(`${stack.controllerUrl}/api/cli/nope`)).json()) as { error: { message: string } };
  assert.match(nf.error.message, /serves no CLI file "nope"; it serves rc-\S+\.gz, rc\.cjs, rc-tty\.cjs/);
  const post = await fetch(`${stack.controllerUrl}/install/rc.sh`, { method: 'POST' });
  assert.equal(post.status, 405);
  const bad = install(['--force']);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /unknown option --force/);
});

test("standalone rc run: stdout and stderr apart, the command's exit code, exact arguments, stdin, refusals", async () => {
  const r = await stack.cli(['run', '--', 'sh', '-c', 'echo out; sleep 0.05; echo err >&2; exit 7'], { rc });
  assert.equal(r.stdout, 'out\n');
  assert.equal(r.stderr, 'err\n');
  assert.equal(r.code, 7);
  const args = ['a b', '', '$HOME', "it's"];
  const p = await stack.cli(['run', '--', 'printf', '[%s]\\n', ...args], { rc });
  assert.equal(p.stdout, args.map((a) => `[${a}]\n`).join(''));
  const stdin = join(home, 'stdin.txt');
  writeFileSync(stdin, 'one\ntwo\nthree\n');
  const wc = await stack.cli(['run', '--', 'wc', '-l'], { rc, stdinFile: stdin });
  assert.equal(wc.stdout.trim(), '3');
  const missing = await stack.cli(['run', '--', 'no-such-command-rc'], { rc });
  assert.equal(missing.code, 127);
  const none = await stack.cli(['run', '--select', 'vram>=200G', '--', 'true'], { rc });
  assert.equal(none.stderr, 'rc: no_matching_device: no device matches the selector: vram>=200G\n');
  assert.equal(none.code, 201);
  const usage = await stack.cli(['run', '--bogus'], { rc });
  assert.equal(usage.code, 2);
  const unconfigured = await stack.cli(['devices'], { rc, env: { RC_CONTROLLER: '', RC_TOKEN: '' } });
  assert.match(unconfigured.stderr, /^rc: not_configured: set RC_CONTROLLER and RC_TOKEN \(ask the operator\)/);
  assert.ok(!unconfigured.stderr.includes('npm start'), 'the standalone rc belongs to no checkout');
});

test('standalone rc run: Ctrl-C kills the job and its children, frees the device and exits 130', async () => {
  await allFree();
  let child: import('node:child_process').ChildProcess | null = null;
  const result = stack.cli(['run', '--', 'sh', '-c', 'sleep 517 & sleep 518 & wait'], {
    rc,
    onSpawn: (c) => {
      child = c;
    },
  });
  await stack.waitFor(() => processesMatching('sleep 517').length === 1 && processesMatching('sleep 518').length === 1, 'the job to run');
  child!.kill('SIGINT');
  const r = await result;
  assert.equal(r.code, 130, r.stderr);
  await stack.waitFor(() => processesMatching('sleep 517').length + processesMatching('sleep 518').length === 0, 'no process left');
  await allFree();
});

/** The standalone rc under a pseudo-terminal of our own, as a person's terminal runs it. */
function ttyRun(args: string[]) {
  const p = pty.spawn(rc, args, {
    name: 'xterm-256color',
    cols: 80,
    rows: 24,
    env: { PATH: process.env.PATH!, HOME: home, RC_CONTROLLER: stack.controllerUrl, RC_TOKEN: stack.clientToken, RC_SUBMITTER: 'tester' },
  });
  guardPtyEnd(p);
  let out = '';
  p.onData((d) => {
    out += d;
  });
  const exit = new Promise<number>((resolve) => p.onExit(({ exitCode }) => resolve(exitCode)));
  const until = async (re: RegExp, ms = 15_000) => {
    const end = Date.now() + ms;
    while (!re.test(out)) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${re} in ${JSON.stringify(out.slice(-1000))}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  return { p, exit, until };
}

test('standalone rc run --tty: the terminal client is built in; size, resize, Ctrl-C to the program, its exit code', async () => {
  await allFree();
  const t = ttyRun(['run', '--tty', '--', 'sh']);
  await t.until(/\$ $|# $/m);
  t.p.write('stty size\r');
  await t.until(/[\r\n]24 80\r\n/);
  t.p.resize(100, 40);
  await new Promise((r) => setTimeout(r, 300));
  t.p.write('stty size\r');
  await t.until(/[\r\n]40 100\r\n/);
  t.p.write('sleep 519\r');
  await stack.waitFor(() => processesMatching('sleep 519').length === 1, 'the sleep to run');
  t.p.write('\x03');
  await stack.waitFor(() => processesMatching('sleep 519').length === 0, 'Ctrl-C to reach the program');
  t.p.write('echo alive-$((2+3))\r');
  await t.until(/[\r\n]alive-5\r\n/);
  t.p.write('exit 6\r');
  assert.equal(await t.exit, 6);
  await allFree();
});

test('RC_CLI=node installs the Node CLI behind a wrapper, and rc run works through it', async () => {
  const dir = join(home, 'node-bin');
  const r = install([dir], { RC_CLI: 'node' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`installed: ${dir.replace(/[.]/g, '\\.')}/rc \\(Node CLI, run by /\\S+/node\\)`));
  const wrapper = join(dir, 'rc');
  assert.match(readFileSync(wrapper, 'utf8'), /^#!\/bin\/sh\nexec node ".*\/\.rc-cli\/rc\.cjs" "\$@"\n$/);
  const run = await stack.cli(['run', '--', 'sh', '-c', 'echo via-node; exit 4'], { rc: wrapper });
  assert.equal(run.stdout, 'via-node\n');
  assert.equal(run.code, 4);
  // The terminal client is the second file beside it.
  const t = spawn(wrapper, ['run', '--tty', '--', 'sh', '-c', 'exit 3'], {
    env: { PATH: process.env.PATH, RC_CONTROLLER: stack.controllerUrl, RC_TOKEN: stack.clientToken, RC_SUBMITTER: 'tester' } as unknown as NodeJS.ProcessEnv,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  t.stdin.end();
  assert.equal(await new Promise((resolve) => t.on('close', resolve)), 3);
});

test('standalone rc run --tty leaves the local terminal as it found it', async () => {
  const p = pty.spawn('/bin/sh', ['-c', `stty -g; ${JSON.stringify(rc)} run --tty -- sh -c 'echo one; echo two; exit 6'; echo "rc=$?"; stty -g`], {
    name: 'xterm-256color',
    cols: 80,
    rows: 24,
    env: { PATH: process.env.PATH!, RC_CONTROLLER: stack.controllerUrl, RC_TOKEN: stack.clientToken, RC_SUBMITTER: 'tester' },
  });
  guardPtyEnd(p);
  let out = '';
  p.onData((d) => {
    out += d;
  });
  await new Promise<void>((resolve) => p.onExit(() => resolve()));
  const [before, after] = out.split('\r\n').filter((l) => /^[0-9a-f]+(:[0-9a-f]+)+$/.test(l));
  // Raw as ssh makes it: the job's lines end \r\n, not \r\r\n.
  assert.match(out, /\r\none\r\ntwo\r\nrc=6\r\n/, JSON.stringify(out));
  assert.ok(before && before === after, `the terminal's settings before and after rc: ${before} / ${after}`);
});

test('a reader that stops early (rc run -- yes | head -n 2): both CLIs exit 141 without a stack trace and kill the job', async () => {
  const node = `${JSON.stringify(process.execPath)} ${JSON.stringify(join(import.meta.dirname, '..', '..', 'dist', 'rc.cjs'))}`;
  for (const [name, cli] of [
    ['node', node],
    ['standalone', JSON.stringify(rc)],
  ] as const) {
    await allFree();
    const submitter = `pipe-${name}`;
    const env = { PATH: process.env.PATH, HOME: home, RC_CONTROLLER: stack.controllerUrl, RC_TOKEN: stack.clientToken, RC_SUBMITTER: submitter };
    const r = spawnSync('bash', ['-c', `${cli} run -- yes | head -n 2; echo "rc=\${PIPESTATUS[0]}" >&2`], {
      encoding: 'utf8',
      env: env as unknown as NodeJS.ProcessEnv,
      timeout: 20_000,
    });
    assert.equal(r.stdout, 'y\ny\n', name);
    assert.equal(r.stderr, 'rc=141\n', `${name}: exit 141 and nothing else on stderr (no stack trace)`);
    await stack.waitFor(async () => {
      const { jobs } = (await stack.api('GET', `/api/jobs?submitter=${submitter}`)).body as { jobs: { state: string }[] };
      return jobs.length === 1 && jobs[0]!.state === 'killed';
    }, `${name}: its job to be killed`);
  }
  await allFree();
});
