// How long a host takes to join (issue 15): from `rc admin host add` to the
// new host's devices free, running the real install script (into a
// temporary root: no systemd here, so the worker starts in the background),
// then `sh -s uninstall`. One controller on a throw-away embedded Postgres.
//   npm run bench:join [-- --hosts 8]
// Also split: the script's run (download, verify, unpack, start, doctor) and
// the worker's start until its devices are free.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { report, startFleet, until } from '../scripts/bench-fleet.mjs';

const { values } = parseArgs({ options: { hosts: { type: 'string', default: '8' } } });
const hosts = Number(values.hosts);
if (!Number.isInteger(hosts) || hosts < 1 || hosts > 100) throw new Error('--hosts: 1 to 100');

const PATH = `${dirname(process.execPath)}:/usr/bin:/bin`;
const rc = await startFleet({ localWorker: false });
const api = async (method, path, body, token = rc.adminToken) => {
  const r = await fetch(rc.controller + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return r.json();
};
const sh = (script, env, args = []) =>
  new Promise((resolve, reject) => {
    const child = spawn('sh', ['-s', ...args], { env: { PATH, HOME: process.env.HOME ?? '/root', ...env }, stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (b) => (err += b));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`the script exited ${code}: ${err}`))));
    child.stdin.end(script);
  });

const total = [];
const scriptMs = [];
const connectMs = [];
try {
  for (let i = 0; i < hosts; i++) {
    const name = `join-${i}`;
    const root = mkdtempSync(join(tmpdir(), 'rc-bench-join-'));
    const t0 = performance.now();
    const { credential } = await api('POST', '/api/admin/hosts', { name });
    const script = await (await fetch(`${rc.controller}/install.sh`)).text();
    await sh(script, { RC_INSTALL_ROOT: root, RC_HOST_TOKEN: credential });
    const t1 = performance.now();
    await until(
      async () => (await api('GET', '/api/devices', undefined, rc.clientToken)).devices.some((d) => d.hostName === name && d.state === 'free'),
      `${name}'s devices free`,
      60_000,
    );
    const t2 = performance.now();
    total.push(t2 - t0);
    scriptMs.push(t1 - t0);
    connectMs.push(t2 - t1);
    await sh(script, { RC_INSTALL_ROOT: root }, ['uninstall']);
    rmSync(root, { recursive: true, force: true });
  }
  console.log(`${hosts} hosts joined one after another (the first includes making the package):`);
  report('host add → its devices free', total);
  report('  of it, the install script (add, fetch, run)', scriptMs);
  report('  then the worker until its devices are free', connectMs);
} finally {
  await rc.stop();
}
