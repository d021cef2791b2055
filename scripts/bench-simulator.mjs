// npm run bench:sim: how the fleet simulator scales. A controller on a
// throw-away embedded Postgres, then --hosts simulated hosts (default 1000)
// of --devices GPUs (default 8) in this process: how long they take to
// register and connect, then the simulator's and the controller's CPU and
// memory while the fleet only heartbeats (every 5 s, the controller's default).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startFleet as startController } from './bench-fleet.mjs';

const { values } = parseArgs({
  options: { hosts: { type: 'string', default: '1000' }, devices: { type: 'string', default: '8' }, idle: { type: 'string', default: '30' } },
});
const hosts = Number(values.hosts);
const devices = Number(values.devices);
const idleS = Number(values.idle);
for (const [name, v, max] of [
  ['hosts', hosts, 10_000],
  ['devices', devices, 64],
  ['idle', idleS, 3600],
]) {
  if (!Number.isInteger(v) || v < 1 || v > max) {
    console.error(`bench:sim: --${name} must be a whole number from 1 to ${max}`);
    process.exit(2);
  }
}

const rc = await startController({ localWorker: false });
const { startFleet, uniformHost } = await import('../dist/simulator.js');
const specs = Array.from({ length: hosts }, (_, i) => uniformHost(`sim-${String(i).padStart(4, '0')}`, i % 2 ? 'H100' : 'A100-80GB', devices));
let fleet = null;
try {
  fleet = await startFleet({ url: rc.controller, adminToken: rc.adminToken, hosts: specs, log: (m) => console.log(`[sim] ${m}`) });
  console.log(
    `${hosts} hosts × ${devices} devices: registered in ${(fleet.timings.registerMs / 1000).toFixed(1)} s, connected in ${(fleet.timings.connectMs / 1000).toFixed(1)} s`,
  );
  const t = Date.now();
  const res = await fetch(`${rc.controller}/api/devices`, { headers: { authorization: `Bearer ${rc.clientToken}` } });
  const listed = (await res.json()).devices.length;
  console.log(`GET /api/devices: ${listed} devices in ${Date.now() - t} ms`);
  // Let the connect's burst settle, then measure a quiet stretch.
  await new Promise((r) => setTimeout(r, 10_000));
  const cpu0 = process.cpuUsage();
  const ctl0 = procCpuS(rc.pid);
  const t0 = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, idleS * 1000));
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  const c = process.cpuUsage(cpu0);
  const simPct = ((c.user + c.system) / 1e6 / wallS) * 100;
  const ctlPct = ((procCpuS(rc.pid) - ctl0) / wallS) * 100;
  const beats = fleet.hosts.reduce((n, h) => n + h.beats, 0);
  console.log(
    `idle heartbeating over ${wallS.toFixed(0)} s: simulator cpu ${simPct.toFixed(1)}% of a core, rss ${(process.memoryUsage.rss() / 1048576).toFixed(0)} MiB; ` +
      `controller cpu ${ctlPct.toFixed(1)}%, rss ${procRssMiB(rc.pid).toFixed(0)} MiB; ${beats} heartbeats and hellos sent in all`,
  );
  const offline = (await (await fetch(`${rc.controller}/api/hosts`, { headers: { authorization: `Bearer ${rc.clientToken}` } })).json()).hosts.filter(
    (h) => h.status !== 'online',
  ).length;
  console.log(`hosts not online at the end: ${offline}`);
} finally {
  await fleet?.stop();
  await rc.stop();
}

function procCpuS(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function procRssMiB(pid) {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
}
