// The dashboard's routes (GET /api/fleet, /api/hosts/:name, /api/samples,
// /api/queue, /api/audit, the jobs filters, sheets that refuse a stale edit)
// against a real controller, workers and Postgres: good answers, bad input
// (400 with a stable code, never 500), wrong credentials, and where a change
// came from in the audit log.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { io } from 'socket.io-client';
import type { AuditEntry, DeviceRow, DeviceSummary, DeviceSamples, Fleet, HostDescription, JobView, QueueEntry, SheetView } from '../../protocol/wire';
import { Stack } from '../helpers/stack';

let stack: Stack;
let db: postgres.Sql;
let hostCredential = '';

before(async () => {
  // Multi-GPU jobs hold devices back at once: the queue's reasons show it without waiting.
  stack = await Stack.start({ workers: [], controllerEnv: { RC_RESERVE_AFTER_S: '0' } });
  await stack.startWorker('alpha', 2);
  await stack.startWorker('beta', 2);
  db = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  const reg = await stack.api('POST', '/api/admin/hosts', { name: 'gamma' }, stack.adminToken);
  hostCredential = (reg.body as { credential: string }).credential;
});
after(async () => {
  await db?.end({ timeout: 2 });
  await stack?.stop();
});

/** A request with the headers given (no bearer unless in them). */
async function call(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(stack.controllerUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

/** The client's address (the test's own: 127.0.0.1 or ::1) and how it signed in. */
const TOKEN = /^(127\.0\.0\.1|::1), token$/;
const DASHBOARD = /^(127\.0\.0\.1|::1), dashboard$/;

const errorOf = (r: { body: unknown }) => (r.body as { error: { code: string; message: string } }).error;

/** The routes refuse no token (401) and a host credential (403). */
async function checkCredentials(path: string): Promise<void> {
  const none = await call('GET', path, {});
  assert.equal(none.status, 401, `${path} without a token`);
  assert.equal(errorOf(none).code, 'unauthorized');
  const host = await stack.api('GET', path, undefined, hostCredential);
  assert.equal(host.status, 403, `${path} with a host credential`);
  assert.equal(errorOf(host).code, 'forbidden');
}

/** Bad input is a 400 with the code and a sentence, never a 500. */
async function checkBad(path: string, message: RegExp, code = 'bad_request', status = 400): Promise<void> {
  const r = await stack.api('GET', path);
  assert.equal(r.status, status, `${path}: ${JSON.stringify(r.body)}`);
  assert.equal(errorOf(r).code, code, path);
  assert.match(errorOf(r).message, message, path);
}

test('GET /api/fleet: every host and device without label details, or one host; the queue length', async () => {
  const r = await stack.api('GET', '/api/fleet');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const fleet = r.body as Fleet;
  assert.deepEqual(
    fleet.hosts.map((h) => [h.name, h.status]),
    [
      ['alpha', 'online'],
      ['beta', 'online'],
      ['gamma', 'offline'],
    ],
  );
  assert.deepEqual(
    fleet.devices.map((d) => d.name),
    ['alpha:gpu0', 'alpha:gpu1', 'beta:gpu0', 'beta:gpu1'],
  );
  assert.ok(fleet.devices.every((d) => !('labelDetails' in d) && d.state === 'free' && Object.keys(d.labels).length > 0));
  assert.equal(fleet.queued, 0);
  // The same labels as GET /api/devices, which has their details with details=1 only.
  const plain = ((await stack.api('GET', '/api/devices')).body as { devices: DeviceSummary[] }).devices;
  assert.ok(plain.every((d) => !('labelDetails' in d)));
  const full = ((await stack.api('GET', '/api/devices?details=1')).body as { devices: DeviceRow[] }).devices;
  assert.ok(full.every((d) => d.labelDetails.length > 0));
  // (Their GPU samples may be a heartbeat apart.)
  assert.deepEqual(
    plain.map((d) => [d.name, d.state, d.labels]),
    full.map((d) => [d.name, d.state, d.labels]),
  );
  const bad = await stack.api('GET', '/api/devices?details=yes');
  assert.equal(bad.status, 400);
  assert.equal((bad.body as { error: { code: string } }).error.code, 'bad_request');
  assert.deepEqual(
    full.map((d) => d.labels),
    fleet.devices.map((d) => d.labels),
  );

  const one = (await stack.api('GET', '/api/fleet?host=beta')).body as Fleet;
  assert.deepEqual(
    one.hosts.map((h) => h.name),
    ['beta'],
  );
  assert.deepEqual(
    one.devices.map((d) => d.name),
    ['beta:gpu0', 'beta:gpu1'],
  );
  await checkBad('/api/fleet?host=nowhere', /no host is named nowhere/, 'not_found', 404);
  await checkBad('/api/fleet?host=bad%20name', /host: "bad name" is not a host name/);
  await checkCredentials('/api/fleet');
});

test('GET /api/hosts/:name: the host, its devices in full, its sheet and its recent jobs newest first', async () => {
  const ids: string[] = [];
  for (const n of [1, 2]) {
    const r = await stack.api('POST', '/api/jobs', { argv: ['true'], submitter: 'tester', device: `alpha:gpu${n - 1}` });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    ids.push((r.body as { job: JobView }).job.id);
  }
  await stack.waitFor(async () => (await Promise.all(ids.map((id) => stack.job(id)))).every((j) => j.state === 'succeeded'), 'the jobs to end');
  await stack.api('PUT', '/api/hosts/alpha/sheet', { body: '# alpha\nbe kind' }, stack.adminToken);
  const r = await stack.api('GET', '/api/hosts/alpha');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const h = r.body as HostDescription;
  assert.equal(h.host.name, 'alpha');
  assert.equal(h.host.status, 'online');
  assert.deepEqual(
    h.devices.map((d) => d.name),
    ['alpha:gpu0', 'alpha:gpu1'],
  );
  assert.ok(h.devices.every((d) => d.labelDetails.length > 0));
  assert.equal(h.sheet?.body, '# alpha\nbe kind');
  assert.deepEqual(
    h.recentJobs.slice(0, 2).map((j) => j.id),
    [ids[1], ids[0]],
  );
  const none = await stack.api('GET', '/api/hosts/nowhere');
  assert.equal(none.status, 404);
  assert.equal(errorOf(none).code, 'not_found');
  assert.match(errorOf(none).message, /no host is named nowhere; rc admin hosts lists them/);
  await checkCredentials('/api/hosts/alpha');
});

test('GET /api/samples: raw samples for 10m, 30 s and 10 min buckets for 1h and 1d; every parameter checked', async () => {
  await db`insert into hosts (name) values ('sampled')`;
  await db`insert into devices (host_name, index) values ('sampled', 0), ('sampled', 1)`;
  const now = Date.now() / 1000;
  const at = (s: number) => new Date(s * 1000);
  const rows: { i: number; t: number; util: number | null; mem: number; total?: number }[] = [
    { i: 0, t: now - 300, util: 10, mem: 100 },
    { i: 0, t: now - 180, util: null, mem: 300 },
    { i: 0, t: now - 30, util: 30, mem: 200, total: 81920 },
    { i: 1, t: now - 60, util: 5, mem: 50 },
  ];
  // Two samples in one 30 s bucket 20 minutes ago, two in one 10 min bucket 3 hours ago.
  const b30 = Math.floor((now - 1200) / 30) * 30;
  rows.push({ i: 0, t: b30 + 5, util: 10, mem: 100 }, { i: 0, t: b30 + 15, util: 31, mem: 500 });
  const b600 = Math.floor((now - 3 * 3600) / 600) * 600;
  rows.push({ i: 0, t: b600 + 10, util: 40, mem: 700 }, { i: 0, t: b600 + 400, util: 60, mem: 900 });
  for (const r of rows)
    await db`insert into gpu_samples (host_name, device_index, at, mem_used_mib, mem_total_mib, util_pct)
      values ('sampled', ${r.i}, ${at(r.t)}, ${r.mem}, ${r.total ?? 81559}, ${r.util})`;

  const get = async (q: string) => {
    const r = await stack.api('GET', `/api/samples?${q}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return (r.body as { samples: DeviceSamples[] }).samples;
  };
  const raw = await get('device=sampled:gpu0');
  assert.equal(raw.length, 1);
  assert.equal(raw[0]!.device, 'sampled:gpu0');
  assert.deepEqual(raw[0]!.utilPct, [10, null, 30], 'the default window is 10m: raw samples, oldest first');
  assert.deepEqual(raw[0]!.memUsedMiB, [100, 300, 200]);
  assert.equal(raw[0]!.memTotalMiB, 81920, "the newest sample's total");
  assert.ok(Math.abs(raw[0]!.at[0]! - (now - 300)) < 1);

  const both = await get('hosts=sampled,nowhere&window=10m');
  assert.deepEqual(
    both.map((s) => s.device),
    ['sampled:gpu0', 'sampled:gpu1'],
  );

  const hour = (await get('device=sampled:gpu0&window=1h'))[0]!;
  const bucket = hour.at.indexOf(b30);
  assert.ok(bucket >= 0, `a bucket starts at ${b30}: ${JSON.stringify(hour.at)}`);
  assert.equal(hour.utilPct[bucket], 20.5, 'utilisation averaged');
  assert.equal(hour.memUsedMiB[bucket], 500, 'memory at its peak');
  assert.ok(hour.at.every((t) => t % 30 === 0));
  assert.ok(!hour.at.includes(b600), 'the 3-hour-old samples are outside the hour');

  const day = (await get('device=sampled:gpu0&window=1d'))[0]!;
  const slot = day.at.indexOf(b600);
  assert.ok(slot >= 0, `a bucket starts at ${b600}: ${JSON.stringify(day.at)}`);
  assert.equal(day.utilPct[slot], 50);
  assert.equal(day.memUsedMiB[slot], 900);
  assert.ok(day.at.every((t) => t % 600 === 0));
  assert.deepEqual(
    [...day.at].sort((a, b) => a - b),
    day.at,
    'oldest first',
  );

  await checkBad('/api/samples', /give either hosts=<name,…> \(at most 500\) or device=<host:gpuN>/);
  await checkBad('/api/samples?hosts=a&device=a:gpu0', /exactly one of them/);
  await checkBad('/api/samples?device=sampled:gpu0&window=2h', /window must be 10m, 1h, 1d, 7d or 90d, not "2h"/);
  await checkBad('/api/samples?device=sampled', /"sampled" is not a device name/);
  await checkBad('/api/samples?hosts=,', /give at least one host name/);
  await checkBad('/api/samples?hosts=a%20b', /"a b" is not a host name/);
  const many = Array.from({ length: 501 }, (_, i) => `h${i}`).join(',');
  await checkBad(`/api/samples?hosts=${many}`, /at most 500 hosts at once, not 501/);
  await checkBad('/api/samples?device=sampled:gpu7', /no device is named sampled:gpu7/, 'not_found', 404);
  await checkCredentials('/api/samples?hosts=sampled');

  // The query is served by gpu_samples_device_at_idx.
  await db`set enable_seqscan = off`;
  const plan = await db.unsafe(
    `explain select * from gpu_samples where host_name = 'sampled' and device_index = 0 and at > now() - interval '1 hour' order by at`,
  );
  await db`reset enable_seqscan`;
  assert.match(plan.map((p) => p['QUERY PLAN']).join('\n'), /gpu_samples_device_at_idx/);
  // Its offline devices would count in the queue's reasons below.
  await db`delete from hosts where name = 'sampled'`;
});

test('GET /api/samples: 7d (hour buckets) and 90d (6-hour buckets) read the 10-minute rows and the raw samples as one series', async () => {
  await db`insert into hosts (name) values ('history')`;
  await db`insert into devices (host_name, index) values ('history', 0)`;
  const now = Date.now() / 1000;
  const hour = Math.floor((now - 3 * 86400) / 3600) * 3600;
  // Two 10-minute rows of one hour three days ago (server/sample-retention.ts made them from raw samples)…
  for (const [t, sum, n, mem, count] of [
    [hour, 90, 3, 700, 3],
    [hour + 600, 10, 1, 900, 2],
  ] as const)
    await db`insert into gpu_samples_coarse (host_name, device_index, at, util_sum, util_samples, mem_used_mib, mem_total_mib, samples)
      values ('history', 0, ${new Date(t * 1000)}, ${sum}, ${n}, ${mem}, 81559, ${count})`;
  // … a raw sample not rolled up yet in the same hour, and one of an hour ago.
  const recent = Math.floor((now - 3600) / 3600) * 3600;
  for (const [t, util, mem] of [
    [hour + 1300, 60, 100],
    [recent + 10, 42, 300],
  ] as const)
    await db`insert into gpu_samples (host_name, device_index, at, mem_used_mib, mem_total_mib, util_pct)
      values ('history', 0, ${new Date(t * 1000)}, ${mem}, 81920, ${util})`;

  const get = async (window: string) => {
    const r = await stack.api('GET', `/api/samples?device=history:gpu0&window=${window}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return (r.body as { samples: DeviceSamples[] }).samples;
  };
  const [week] = await get('7d');
  assert.deepEqual(week, {
    device: 'history:gpu0',
    at: [hour, recent],
    utilPct: [32, 42],
    memUsedMiB: [900, 300],
    memTotalMiB: 81920,
  });
  const [quarter] = await get('90d');
  const six = (t: number) => Math.floor(t / 21600) * 21600;
  assert.deepEqual(quarter!.at, [six(hour), six(recent)]);
  assert.deepEqual(quarter!.utilPct, [32, 42], 'weighted by the samples behind each row: (90 + 10 + 60) / 5');
  const hosts = await stack.api('GET', '/api/samples?hosts=history&window=90d');
  assert.equal(hosts.status, 200);
  await checkBad('/api/samples?hosts=history&window=30d', /window must be 10m, 1h, 1d, 7d or 90d, not "30d"/);
  await db`delete from gpu_samples_coarse where host_name = 'history'`;
  await db`delete from gpu_samples where host_name = 'history'`;
  await db`delete from hosts where name = 'history'`;
});

test('GET /api/queue: queued jobs in order, each with why it waits: a busy device, a multi-GPU reservation', async () => {
  // Holds take alpha:gpu0 and beta:gpu0: each host has one free device left.
  const holds: string[] = [];
  for (const device of ['alpha:gpu0', 'beta:gpu0']) {
    const r = await stack.api('POST', '/api/jobs', { kind: 'hold', ttlS: 600, submitter: 'tester', device });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    holds.push((r.body as { job: JobView }).job.id);
  }
  await stack.waitFor(async () => (await Promise.all(holds.map((id) => stack.job(id)))).every((j) => j.state === 'running'), 'the holds to start');
  const submit = async (body: Record<string, unknown>) => {
    const r = await stack.api('POST', '/api/jobs', { argv: ['true'], submitter: 'tester', ...body });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return (r.body as { job: JobView }).job.id;
  };
  const busy = await submit({ device: 'alpha:gpu0' });
  const big = await submit({ gpus: 2 });
  // After the reservation: alpha:gpu1 is free but held back for the two-GPU job.
  const heldBack = await submit({ device: 'alpha:gpu1' });
  try {
    const r = await stack.api('GET', '/api/queue');
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const jobs = (r.body as { jobs: QueueEntry[] }).jobs;
    assert.deepEqual(
      jobs.map((j) => [j.id, j.position]),
      [
        [busy, 0],
        [big, 1],
        [heldBack, 2],
      ],
    );
    const [b, m, h] = jobs;
    assert.deepEqual(
      { ...b!.why },
      { matching: 1, free: 0, busy: 1, off: 0, unhealthy: 0, offline: 0, reserved: null, text: 'its one matching device, alpha:gpu0, is busy' },
    );
    assert.deepEqual(m!.why.reserved, ['alpha:gpu0', 'alpha:gpu1']);
    assert.equal(m!.why.matching, 4);
    assert.equal(m!.why.busy, 2);
    assert.equal(
      m!.why.text,
      '2 of 4 matching devices are free, not 2 on one host; 2 are busy; it holds back alpha:gpu0 and alpha:gpu1 until 2 of them are free',
    );
    assert.equal(h!.why.text, `the free matching device is held back for job ${big}, which waits for more`);
    // The same order as rc ps.
    const ps = ((await stack.api('GET', '/api/ps')).body as { jobs: { id: string; position: number | null }[] }).jobs.filter((j) => j.position !== null);
    assert.deepEqual(
      ps.map((j) => j.id),
      jobs.map((j) => j.id),
    );
    assert.equal(((await stack.api('GET', '/api/fleet')).body as Fleet).queued, 3);
    await checkCredentials('/api/queue');
  } finally {
    for (const id of [heldBack, big, busy, ...holds]) await stack.api('POST', `/api/jobs/${id}/kill`, { submitter: 'tester' });
  }
});

test('GET /api/jobs: by kind, by exact name, and paged back with before', async () => {
  const ids: string[] = [];
  for (const n of [1, 2, 3]) {
    const r = await stack.api('POST', '/api/jobs', { argv: ['true'], submitter: 'pager', name: 'paged' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    ids.push((r.body as { job: JobView }).job.id);
    void n;
  }
  const list = async (q: string) => {
    const r = await stack.api('GET', `/api/jobs?${q}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return (r.body as { jobs: JobView[] }).jobs.map((j) => j.id);
  };
  assert.deepEqual(await list('name=paged'), [ids[2], ids[1], ids[0]]);
  assert.deepEqual(await list('name=paged&limit=1'), [ids[2]]);
  assert.deepEqual(await list(`name=paged&limit=1&before=${ids[2]}`), [ids[1]]);
  assert.deepEqual(await list(`name=paged&before=${ids[1]}`), [ids[0]]);
  assert.deepEqual(await list(`name=paged&before=${ids[0]}`), []);
  assert.deepEqual(await list('name=paged&kind=hold'), []);
  const holds = (await stack.api('GET', '/api/jobs?kind=hold,cp')).body as { jobs: JobView[] };
  assert.ok(holds.jobs.length >= 2 && holds.jobs.every((j) => j.kind === 'hold' || j.kind === 'cp'));
  assert.deepEqual(await list('name=no-such-name'), []);

  await checkBad('/api/jobs?kind=batch', /unknown kind batch; kinds are run, tty, hold, cp/);
  await checkBad('/api/jobs?before=j0000000000', /no job j0000000000 to page back from/, 'not_found', 404);
  await checkBad('/api/jobs?before=yesterday', /before: a job id/);
  await checkBad('/api/jobs?name=bad%20name', /name: job name "bad name" is not valid/);
  await checkCredentials('/api/jobs');
});

test('sheets and notes refuse a stale edit (409, who saved it and when); a matching version is accepted', async () => {
  const put = (path: string, body: Record<string, unknown>) => stack.api('PUT', path, body, stack.adminToken);
  // Two editors open beta's empty sheet.
  const first = await put('/api/hosts/beta/sheet', { body: 'first', ifUpdatedAt: null });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const v1 = (first.body as { sheet: SheetView }).sheet;
  const second = await put('/api/hosts/beta/sheet', { body: 'second', ifUpdatedAt: null });
  assert.equal(second.status, 409, JSON.stringify(second.body));
  assert.equal(errorOf(second).code, 'conflict');
  assert.ok(errorOf(second).message.startsWith(`${v1.updatedBy} saved the sheet of beta at ${v1.updatedAt}, after you opened it`), errorOf(second).message);
  assert.match(errorOf(second).message, /reload to see their version/);
  // Reloaded: the version is the one shown (millisecond precision), so it matches.
  const shown = ((await stack.api('GET', '/api/hosts/beta/sheet')).body as { sheet: SheetView }).sheet;
  assert.equal(shown.updatedAt, v1.updatedAt);
  const again = await put('/api/hosts/beta/sheet', { body: 'second', ifUpdatedAt: shown.updatedAt });
  assert.equal(again.status, 200, JSON.stringify(again.body));
  const v2 = (again.body as { sheet: SheetView }).sheet;
  // The first editor, still on v1, is refused now; without ifUpdatedAt the last write wins (rc admin sheet).
  assert.equal((await put('/api/hosts/beta/sheet', { body: 'stale', ifUpdatedAt: v1.updatedAt })).status, 409);
  assert.equal((await put('/api/hosts/beta/sheet', { body: 'forced' })).status, 200);
  assert.equal(((await stack.api('GET', '/api/hosts/beta/sheet')).body as { sheet: SheetView }).sheet.body, 'forced');
  void v2;
  // Removed meanwhile.
  assert.equal((await put('/api/hosts/beta/sheet', { body: '' })).status, 200);
  const gone = await put('/api/hosts/beta/sheet', { body: 'x', ifUpdatedAt: v1.updatedAt });
  assert.equal(gone.status, 409);
  assert.match(errorOf(gone).message, /the sheet of beta was removed after you opened it/);

  // A device's note, the same way.
  const n1 = await put('/api/devices/beta:gpu1/note', { body: 'flaky fan', ifUpdatedAt: null });
  assert.equal(n1.status, 200, JSON.stringify(n1.body));
  const n2 = await put('/api/devices/beta:gpu1/note', { body: 'fine', ifUpdatedAt: null });
  assert.equal(n2.status, 409);
  assert.match(errorOf(n2).message, /saved the note of beta:gpu1 at/);
  const n3 = await put('/api/devices/beta:gpu1/note', { body: 'fine', ifUpdatedAt: (n1.body as { note: SheetView }).note.updatedAt });
  assert.equal(n3.status, 200);
  // A malformed version is the body's mistake.
  const bad = await put('/api/hosts/beta/sheet', { body: 'x', ifUpdatedAt: 'yesterday' });
  assert.equal(bad.status, 400);
  assert.equal(errorOf(bad).code, 'bad_request');
  // A client token may not write.
  assert.equal((await stack.api('PUT', '/api/hosts/beta/sheet', { body: 'x' })).status, 403);
});

test('GET /api/audit: newest first, filtered and paged; each entry says where it came from (dashboard or token)', async (t) => {
  const live = io(`${stack.controllerUrl}/`, { auth: { token: stack.clientToken }, transports: ['websocket'], reconnection: false });
  t.after(() => live.close());
  const heard: { what: string }[] = [];
  live.on('changed', (c: { what: string }) => heard.push(c));
  await stack.waitFor(() => live.connected, 'the live view to connect');

  // The dashboard: the session cookie, from its own origin, as JSON.
  const own = new URL(stack.controllerUrl).origin;
  const viaCookie = await call(
    'PUT',
    '/api/hosts/alpha/sheet',
    { cookie: await stack.signIn(stack.adminToken), origin: own, 'content-type': 'application/json' },
    { body: 'from the dashboard' },
  );
  assert.equal(viaCookie.status, 200, JSON.stringify(viaCookie.body));
  await stack.waitFor(() => heard.some((c) => c.what === 'audit'), 'the live view to hear of the audit row');
  const viaToken = await stack.api('PUT', '/api/hosts/alpha/sheet', { body: 'from a script' }, stack.adminToken);
  assert.equal(viaToken.status, 200);
  const created = await stack.api('POST', '/api/admin/tokens', { name: 'audited-one', kind: 'client' }, stack.adminToken);
  assert.equal(created.status, 201, JSON.stringify(created.body));

  // The admin reads the whole log (a client token only its own rows: the next test).
  const list = async (q: string) => {
    const r = await stack.api('GET', `/api/audit?${q}`, undefined, stack.adminToken);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return (r.body as { entries: AuditEntry[] }).entries;
  };
  const sheets = await list('action=sheet.write&target=alpha');
  assert.match(sheets[0]!.origin ?? '', TOKEN);
  assert.match(sheets[1]!.origin ?? '', DASHBOARD);
  assert.ok(sheets[0]!.id > sheets[1]!.id, 'newest first');
  assert.equal(sheets[0]!.target, 'alpha');
  assert.deepEqual(sheets[0]!.detail, { bytes: 13 });

  const tokens = await list('action=token.*');
  assert.equal(tokens[0]!.action, 'token.create');
  assert.equal(tokens[0]!.target, 'audited-one');
  assert.match(tokens[0]!.origin ?? '', TOKEN);
  // Registering a host (the test's setup) was a request too; a kill is recorded with the submitter and token.
  assert.match((await list('action=host.register&target=gamma'))[0]!.origin ?? '', TOKEN);
  const kills = await list('action=job.kill&actor=TESTER');
  assert.ok(kills.length > 0 && kills.every((e) => e.actor.startsWith('tester (') && TOKEN.test(e.origin ?? '')));

  const all = await list('limit=3');
  assert.equal(all.length, 3);
  const next = await list(`limit=3&before=${all[2]!.id}`);
  assert.ok(next.length > 0 && next[0]!.id < all[2]!.id);
  assert.deepEqual(await list('target=%25_nothing_%25'), [], 'LIKE wildcards in a filter are taken literally');

  await checkBad('/api/audit?limit=0', /limit must be a whole number from 1 to 500, not "0"/);
  await checkBad('/api/audit?limit=501', /from 1 to 500/);
  await checkBad('/api/audit?before=-1', /before: an entry's id/);
  await checkBad('/api/audit?action=DROP%20TABLE', /is not an action; give one like job.kill, or a prefix like token.\*/);
  await checkCredentials('/api/audit');
  // The client token wrote none of the sheets, tokens or registrations: it reads none of them.
  const mine = ((await stack.api('GET', '/api/audit?limit=500')).body as { entries: AuditEntry[] }).entries;
  assert.ok(mine.length > 0 && mine.every((e) => e.action === 'job.kill' && e.actor.startsWith('tester (')), JSON.stringify(mine));
});

test('a client token reads only the audit rows it caused (and the controller acts on its jobs); an admin reads them all; no filter widens a client view', async () => {
  const token = async (name: string) => {
    const r = await stack.api('POST', '/api/admin/tokens', { name, kind: 'client' }, stack.adminToken);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body as { id: number; token: string };
  };
  const [a, b] = [await token('audit-a'), await token('audit-b')];
  // Each submits a job and kills it: a job.kill row each.
  const submitAndKill = async (t: { token: string }, submitter: string) => {
    const r = await stack.api('POST', '/api/jobs', { argv: ['sleep', '60'], submitter }, t.token);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const id = (r.body as { job: JobView }).job.id;
    const k = await stack.api('POST', `/api/jobs/${id}/kill`, { submitter }, t.token);
    assert.equal(k.status, 200, JSON.stringify(k.body));
    return id;
  };
  const jobA = await submitAndKill(a, 'alice');
  const jobB = await submitAndKill(b, 'bob');
  // The controller's own act on a job (as an idle hold's release writes it): its submitting token reads it.
  await db`insert into audit (actor, action, target, detail) values ('controller', 'hold.idle_release', ${jobA}, '{"owner":"alice"}'::jsonb)`;
  await db`insert into audit (actor, action, target, detail) values ('controller', 'hold.idle_release', ${jobB}, '{"owner":"bob"}'::jsonb)`;

  const read = async (t: string, q = '') => {
    const r = await stack.api('GET', `/api/audit?limit=500${q}`, undefined, t);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return (r.body as { entries: AuditEntry[] }).entries;
  };
  const ofA = await read(a.token);
  assert.deepEqual(
    ofA.map((e) => [e.action, e.target]),
    [
      ['hold.idle_release', jobA],
      ['job.kill', jobA],
    ],
  );
  // No other token's name, binding or origin in what A reads: only its own token, or none (the controller's).
  for (const e of ofA) {
    assert.ok(e.tokenId === a.id || (e.tokenId === null && e.origin === null), JSON.stringify(e));
    assert.ok(!JSON.stringify(e).includes('audit-b') && !JSON.stringify(e).includes('admin'), JSON.stringify(e));
  }
  const ofB = await read(b.token);
  assert.deepEqual(
    ofB.map((e) => [e.action, e.target]),
    [
      ['hold.idle_release', jobB],
      ['job.kill', jobB],
    ],
  );
  // The admin reads both, and the token.create rows the admin wrote.
  const all = await read(stack.adminToken);
  for (const id of [jobA, jobB]) assert.ok(all.some((e) => e.action === 'job.kill' && e.target === id));
  assert.ok(all.some((e) => e.action === 'token.create' && e.target === 'audit-b'));

  // A's filters narrow A's own rows; naming B finds nothing.
  assert.deepEqual(await read(a.token, '&actor=bob'), []);
  assert.deepEqual(await read(a.token, `&target=${jobB}`), []);
  assert.deepEqual(await read(a.token, '&action=token.*'), []);
  assert.deepEqual(await read(a.token, `&actor=${encodeURIComponent(`token ${b.id}`)}`), []);
  // A query key the log does not take is refused, not ignored.
  await checkBad(`/api/audit?token=${b.id}`, /token: not a filter of the audit log; it takes actor, action, target, before, since and limit/);
  await checkBad('/api/audit?submitter=bob', /submitter: not a filter/);
});

test('the live view hears of new GPU samples', { timeout: 30_000 }, async (t) => {
  const live = io(`${stack.controllerUrl}/`, { auth: { token: stack.clientToken }, transports: ['websocket'], reconnection: false });
  t.after(() => live.close());
  const heard: { what: string }[] = [];
  live.on('changed', (c: { what: string }) => heard.push(c));
  await stack.waitFor(() => live.connected, 'the live view to connect');
  // A worker with (fake) GPUs sends samples with every heartbeat.
  const { fakeNvidiaSmiDir } = await import('../helpers/fake-nvidia-smi');
  await stack.startWorker('delta', 2, { PATH: `${fakeNvidiaSmiDir()}:${process.env.PATH}` });
  await stack.waitFor(() => heard.some((c) => c.what === 'samples'), 'the live view to hear of samples', 20_000);
  const samples = (await stack.api('GET', '/api/samples?hosts=delta')).body as { samples: DeviceSamples[] };
  assert.deepEqual(
    samples.samples.map((s) => s.device),
    ['delta:gpu0', 'delta:gpu1'],
  );
  await stack.stopWorker('delta');
});

test('a big answer is gzipped for a client that takes gzip, a small one never; a client that does not ask gets plain JSON', async () => {
  await db`insert into jobs (id, submitter, argv, state, ended_at)
    select 'jz' || lpad(g::text, 9, '0'), 'bulk', '["python", "train.py", "--epochs", "100"]'::jsonb, 'succeeded', now()
    from generate_series(1, 600) g`;
  const { request } = await import('node:http');
  const get = (path: string, encoding: string | null) =>
    new Promise<{ encoding: string | undefined; bytes: Buffer }>((resolve, reject) => {
      const req = request(stack.controllerUrl + path, {
        headers: { authorization: `Bearer ${stack.clientToken}`, ...(encoding ? { 'accept-encoding': encoding } : {}) },
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ encoding: res.headers['content-encoding'], bytes: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end();
    });
  const { gunzipSync } = await import('node:zlib');
  const zipped = await get('/api/jobs?submitter=bulk&limit=1000', 'gzip, deflate, br');
  assert.equal(zipped.encoding, 'gzip');
  const jobs = (JSON.parse(gunzipSync(zipped.bytes).toString()) as { jobs: JobView[] }).jobs;
  assert.equal(jobs.length, 600);
  const plain = await get('/api/jobs?submitter=bulk&limit=1000', null);
  assert.equal(plain.encoding, undefined);
  assert.equal((JSON.parse(plain.bytes.toString()) as { jobs: JobView[] }).jobs.length, 600);
  assert.ok(zipped.bytes.length * 5 < plain.bytes.length, `gzip: ${zipped.bytes.length} of ${plain.bytes.length} bytes`);
  assert.equal((await get('/api/jobs?submitter=bulk&limit=1000', 'gzip;q=0')).encoding, undefined, 'q=0 refuses it');
  assert.equal((await get('/api/whoami', 'gzip')).encoding, undefined, 'small answers are sent as they are');
  await db`delete from jobs where submitter = 'bulk'`;
});
