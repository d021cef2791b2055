// npm run bench:offline: do offline devices cost a submit anything? A
// controller with its local worker (two CPU slots), then --hosts simulated
// hosts of 8 devices (default 125: 1,000 devices) that connect and go away,
// so the fleet is mostly offline. submit→start of --jobs `true` jobs (no
// selector: every device matches, the offline ones included), before the
// offline hosts exist and after (one after the other: the fleet is there or not).
import { request } from 'node:http';
import { parseArgs } from 'node:util';
import { report, startFleet, until } from '../scripts/bench-fleet.mjs';

const { values } = parseArgs({ options: { hosts: { type: 'string', default: '125' }, jobs: { type: 'string', default: '200' } } });
const hosts = Number(values.hosts);
const jobs = Number(values.jobs);
if (!Number.isInteger(hosts) || hosts < 1 || hosts > 2000 || !Number.isInteger(jobs) || jobs < 20 || jobs > 5000) {
  console.error('bench:offline: --hosts 1..2000, --jobs 20..5000');
  process.exit(2);
}

const rc = await startFleet({ localWorker: true });
const sim = await import('../dist/simulator.js');
try {
  await until(async () => (await api('GET', '/api/devices')).devices.filter((d) => d.state === 'free').length === 2, 'the local worker');
  const alone = [];
  for (let i = 0; i < 40; i++) alone.push(await submitToStart()); // warm-up, kept out
  alone.length = 0;
  for (let i = 0; i < jobs / 2; i++) alone.push(await submitToStart());
  const specs = Array.from({ length: hosts }, (_, i) => sim.uniformHost(`off-${String(i).padStart(4, '0')}`, 'H100', 8));
  const fleet = await sim.startFleet({ url: rc.controller, adminToken: rc.adminToken, hosts: specs, jobs: 'answer' });
  await fleet.stop();
  await until(
    async () => (await api('GET', '/api/devices')).devices.filter((d) => d.state === 'offline').length === hosts * 8,
    'the simulated hosts to be offline',
    120_000,
  );
  const withOffline = [];
  for (let i = 0; i < jobs / 2; i++) withOffline.push(await submitToStart());
  report('submit→start, 2 local slots alone', alone);
  report(`submit→start, 2 local slots + ${hosts * 8} offline devices`, withOffline);
} finally {
  await rc.stop();
}

async function api(method, path) {
  const r = await fetch(rc.controller + path, { method, headers: { authorization: `Bearer ${rc.clientToken}` } });
  return r.json();
}

/** One streamed submit of `true`: ms from the request to its `started` frame, after which it runs to its end. */
function submitToStart() {
  return new Promise((resolve, reject) => {
    const sent = performance.now();
    let started = 0;
    const req = request(
      `${rc.controller}/api/jobs`,
      { method: 'POST', headers: { authorization: `Bearer ${rc.clientToken}`, accept: 'application/x-rc-stream', 'content-type': 'application/json' } },
      (res) => {
        let buf = Buffer.alloc(0);
        res.on('data', (c) => {
          buf = Buffer.concat([buf, c]);
          while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
            const len = buf.readUInt32BE(1);
            if (buf[0] === 3 && !started && JSON.parse(buf.subarray(5, 5 + len)).type === 'started') started = performance.now();
            buf = buf.subarray(5 + len);
          }
        });
        res.on('end', () => resolve(started - sent));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ argv: ['true'], submitter: 'bench' }));
  });
}
