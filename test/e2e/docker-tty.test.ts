// rc run --tty with the Docker runtime: `docker exec -it` under node-pty on the
// worker, the built CLI under a pseudo-terminal of the test's own.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import * as pty from 'node-pty';
import { guardPtyEnd } from '../../worker/pty-end';
import { ensureTestImage } from '../helpers/docker';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
let stack: Stack;
const host = `dt${process.pid}`;
const docker = (...args: string[]) => spawnSync('docker', args, { encoding: 'utf8' });
const open = new Set<pty.IPty>();

before(async () => {
  const image = await ensureTestImage();
  stack = await Stack.start({ workers: [], controllerEnv: { RC_TTY_GRACE_S: '2' } });
  await stack.startWorker(host, 1, { RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: image });
});
afterEach(() => {
  for (const p of open) p.kill('SIGKILL');
  open.clear();
});
after(async () => {
  await stack.stop();
  const ids = docker('ps', '-aq', '--filter', `label=rc.host=${host}`).stdout.split('\n').filter(Boolean);
  if (ids.length) docker('rm', '-f', ...ids);
});

function rcTty(args: string[], env: Record<string, string> = {}) {
  const p = pty.spawn(process.execPath, [join(ROOT, 'dist', 'rc.cjs'), ...args], {
    name: 'xterm-256color',
    cols: 80,
    rows: 24,
    cwd: ROOT,
    env: { PATH: process.env.PATH!, RC_CONTROLLER: stack.controllerUrl, RC_TOKEN: stack.clientToken, RC_SUBMITTER: 'tester', ...env },
  });
  // rc may exit right after its last output: read to the end as the worker reads its jobs' terminals.
  guardPtyEnd(p);
  open.add(p);
  let out = '';
  p.onData((d) => {
    out += d;
  });
  const exit = new Promise<number>((resolve) =>
    p.onExit(({ exitCode }) => {
      open.delete(p);
      resolve(exitCode);
    }),
  );
  const until = async (re: RegExp, ms = 20_000) => {
    const end = Date.now() + ms;
    while (!re.test(out)) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${re} in ${JSON.stringify(out.slice(-1500))}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  return { p, exit, until, text: () => out };
}

test('a terminal in the device container: root in /workspace, sh when there is no bash, resizes, exit code', async () => {
  const t = rcTty(['run', '--tty', '-d', `${host}:gpu0`]);
  await t.until(/\/workspace # /);
  t.p.write('echo "in-$((2*3)) $(id -u) $(pwd) $TERM $RC_DEVICES"\r');
  await t.until(new RegExp(`[\\r\\n]in-6 0 /workspace xterm-256color ${host}:gpu0\\r\\n`));
  t.p.resize(120, 33);
  await new Promise((r) => setTimeout(r, 300));
  t.p.write('stty size\r');
  await t.until(/[\r\n]33 120\r\n/);
  t.p.write('exit 6\r');
  assert.equal(await t.exit, 6);
});

test('rc kill ends a container terminal and everything it started in the container', async () => {
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'the device to be free');
  const t = rcTty(['run', '--tty', '-d', `${host}:gpu0`, '--', 'sh']);
  await t.until(/\/workspace # /);
  t.p.write('sleep 4731 & sleep 4732\r');
  const inside = () => docker('exec', `rc-${host}-gpu0`, 'ps').stdout;
  await stack.waitFor(() => inside().includes('sleep 4731') && inside().includes('sleep 4732'), 'the sleeps to run in the container');
  const jobs = (await stack.api('GET', '/api/jobs?state=running')).body as { jobs: { id: string }[] };
  assert.equal((await stack.cli(['kill', jobs.jobs[0]!.id])).code, 0);
  const code = await t.exit;
  assert.ok(code === 143 || code === 137, `exit ${code}: ${t.text().slice(-300)}`);
  await stack.waitFor(() => !inside().includes('sleep 473'), 'nothing left in the container', 10_000);
});

test('a terminal gets --env, and the value is on no command line on the host', async () => {
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'the device to be free');
  const secret = `s3cr3t-${randomBytes(12).toString('hex')}`;
  const t = rcTty(['run', '--tty', '-d', `${host}:gpu0`, '--env', 'SECRET_X', '--', 'sh'], { SECRET_X: secret });
  await t.until(/\/workspace # /);
  t.p.write('echo "seen-$SECRET_X-end"\r');
  await t.until(new RegExp(`[\\r\\n]seen-${secret}-end\\r\\n`));
  const onCmdlines = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((pid) => {
      try {
        return `${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')}`;
      } catch {
        return ''; // gone meanwhile
      }
    })
    .filter((line) => line.includes(secret));
  assert.deepEqual(onCmdlines, [], 'the value is on a command line');
  t.p.write('exit 0\r');
  assert.equal(await t.exit, 0);
});
