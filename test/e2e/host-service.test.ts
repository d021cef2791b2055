// Taking hosts out of service against a real stack: `rc admin host off` drains
// (the running job finishes, no new one starts, devices read off (busy), then
// off), `on` takes jobs again, `rm` is refused while jobs run and then revokes
// the credential so the worker stops for good (exit 78) and the host is listed
// only with --all; every step is in `rc admin audit`. And the boundaries: bad
// input and the wrong credential for every new route and flag.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await Stack.start({ workers: [] });
});
after(async () => {
  await stack.stop();
});

const admin = (args: string[]) => stack.cli(['admin', ...args], { env: { RC_TOKEN: stack.adminToken } });
const state = async (name: string) => (await stack.devices()).find((d) => d.name === name)?.state;
const flag = (name: string) => join(stack.dataDir, name);

test('off drains a host: its job finishes, no new job starts there until on; off and on are audited', async () => {
  await stack.startWorker('drainbox', 1);
  const go = flag('drain-go');
  const first = stack.runJob(['-d', 'drainbox:gpu0'], `while [ ! -e ${go} ]; do sleep 0.05; done; echo first done`);
  const firstId = await first.id;

  const off = await admin(['host', 'off', 'drainbox', '--reason', 'driver upgrade']);
  assert.equal(off.code, 0, off.stderr);
  assert.match(off.stdout, /host drainbox is off: no new jobs start there; running ones finish/);
  assert.match((await stack.cli(['devices'])).stdout, /drainbox:gpu0\s+off \(busy\)\s+tester \(j\w+\)/);
  const described = await stack.cli(['describe', 'drainbox:gpu0']);
  assert.match(described.stdout, /^drainbox:gpu0 +off \(busy\)/);
  assert.match(described.stdout, /drainbox is turned off \(by admin:[^,]+, \d+s ago: driver upgrade\): no new jobs start here; the running one finishes/);
  const again = await admin(['host', 'off', 'drainbox']);
  assert.match(again.stdout, /was already off .* by admin:/);

  // A job for that device waits; the running one is not touched.
  let secondOut = '';
  const second = stack.cli(['run', '-d', 'drainbox:gpu0', '--', 'echo', 'second ran'], {
    timeoutMs: 60_000,
    onSpawn: (c) => c.stdout!.on('data', (b: Buffer) => (secondOut += b.toString())),
  });
  writeFileSync(go, '');
  const f = await first.done;
  assert.equal(f.code, 0, f.stderr);
  assert.match(f.stdout, /first done/);
  assert.equal((await stack.job(firstId)).state, 'succeeded');
  await stack.waitFor(async () => (await state('drainbox:gpu0')) === 'off', 'the device to read off once its job ended');
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(secondOut, '', 'no new job starts on a host turned off');
  const queue = (await stack.api('GET', '/api/queue')).body as { jobs: { why: { off: number; text: string } }[] };
  assert.equal(queue.jobs.length, 1);
  assert.equal(queue.jobs[0]!.why.off, 1);
  assert.match(queue.jobs[0]!.why.text, /its one matching device, drainbox:gpu0, is on a host turned off/);

  const on = await admin(['host', 'on', 'drainbox']);
  assert.equal(on.code, 0, on.stderr);
  const s = await second;
  assert.equal(s.code, 0, s.stderr);
  assert.equal(s.stdout, 'second ran\n');
  assert.match((await admin(['host', 'on', 'drainbox'])).stdout, /was not off; nothing changed/);

  const audit = await admin(['audit', '--since', '1h', '--action', 'host.*']);
  assert.equal(audit.code, 0, audit.stderr);
  const lines = audit.stdout.trim().split('\n');
  assert.match(lines[0]!, /^WHEN\s+WHO\s+WHAT\s+TARGET\s+FROM\s+DETAIL/);
  // Who: the admin's name and the token the request came with.
  const whoami = (await stack.api('GET', '/api/whoami', undefined, stack.adminToken)).body as { name: string; tokenId: number };
  assert.match(
    lines[1]!,
    new RegExp(`admin:${whoami.name.replace(/[()]/g, '\\$&')} \\(token ${whoami.tokenId}\\)\\s+host\\.on\\s+drainbox\\s+127\\.0\\.0\\.1, token`),
  );
  assert.match(lines[2]!, /admin:.+?\s+host\.off\s+drainbox\s+127\.0\.0\.1, token\s+\{"reason":"driver upgrade","running":1\}/);
  const asJson = JSON.parse((await admin(['audit', '--limit', '1', '--json'])).stdout) as { entries: { action: string; tokenId: number | null }[] };
  assert.equal(asJson.entries.length, 1);
  assert.equal(asJson.entries[0]!.tokenId, whoami.tokenId);
});

test('a claim that read the fleet before the host was turned off starts nothing there (the claim re-checks)', async () => {
  await stack.startWorker('racebox', 1);
  // Turned off behind the controller's back (as another controller's change not yet heard): the fleet in memory still says free.
  const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  try {
    await sql`update hosts set off_since = now(), off_by = 'test' where name = 'racebox'`;
    const r = await stack.cli(['run', '-d', 'racebox:gpu0', '--no-wait', '--', 'true']);
    assert.equal(r.code, 202, `queued and refused by --no-wait, not started: ${r.stdout}${r.stderr}`);
    const [leases] = await sql<{ n: number }[]>`
      select count(*)::int as n from leases l join devices d on d.id = l.device_id where d.host_name = 'racebox'`;
    assert.equal(leases!.n, 0);
    await stack.waitFor(async () => (await state('racebox:gpu0')) === 'off', 'the failed claim to load the host again');
  } finally {
    await sql`update hosts set off_since = null, off_by = null where name = 'racebox'`;
    await sql.end();
  }
});

test('rm is refused while a job runs; then it revokes the credential, the worker stops for good, and the host is listed only with --all', async () => {
  await stack.startWorker('gonebox', 1);
  const go = flag('gone-go');
  const job = stack.runJob(['-d', 'gonebox:gpu0'], `while [ ! -e ${go} ]; do sleep 0.05; done`);
  await job.id;
  const refused = await admin(['host', 'rm', 'gonebox']);
  assert.equal(refused.code, 211);
  assert.match(refused.stderr, /^rc: host_busy: host gonebox still runs a job: j\w+; turn it off so no new job starts \(rc admin host off gonebox\)/);
  writeFileSync(go, '');
  assert.equal((await job.done).code, 0);
  await stack.waitFor(async () => (await state('gonebox:gpu0')) === 'free', 'the job to end');

  const worker = stack.workers.get('gonebox')!;
  const exited = new Promise<number | null>((r) => worker.once('exit', (code) => r(code)));
  const rm = await admin(['host', 'rm', 'gonebox']);
  assert.equal(rm.code, 0, rm.stderr);
  assert.match(rm.stdout, /host gonebox removed: its credential was revoked and its worker cut off/);
  assert.equal(await exited, 78, 'the worker exits with the status a service manager does not restart');
  assert.match(
    stack.workerLogs.get('gonebox')!,
    /host_removed: host gonebox was removed from rc by admin:.+ at .*this worker stops for good\. To uninstall it: systemctl disable --now rc-worker/,
  );

  assert.doesNotMatch((await stack.cli(['devices'])).stdout, /gonebox/);
  assert.match((await stack.cli(['devices', '--all'])).stdout, /gonebox:gpu0\s+removed/);
  const hosts = await admin(['hosts']);
  assert.doesNotMatch(hosts.stdout, /gonebox/);
  assert.match((await admin(['hosts', '--all'])).stdout, /gonebox\s+removed\s+.*removed \d+s ago by admin:/);
  const page = (await stack.api('GET', '/api/hosts/gonebox')).body as { host: { removed: unknown }; devices: { state: string }[] };
  assert.ok(page.host.removed);
  assert.deepEqual(
    page.devices.map((d) => d.state),
    ['removed'],
  );
  // A job for it is refused at once: nothing could ever match.
  assert.equal((await stack.cli(['run', '-d', 'gonebox:gpu0', '--', 'true'])).code, 201);
  // The old credential is dead everywhere.
  const credential = (stack as unknown as { hostCredentials: Map<string, string> }).hostCredentials.get('gonebox')!;
  assert.equal((await stack.api('GET', '/api/worker/whoami', undefined, credential)).status, 401);
  assert.match((await admin(['audit', '--action', 'host.remove'])).stdout, /host\.remove\s+gonebox/);

  // Registered again: a new credential, listed and scheduled again once its worker connects.
  (stack as unknown as { hostCredentials: Map<string, string> }).hostCredentials.delete('gonebox');
  await stack.startWorker('gonebox', 1);
  assert.equal(await state('gonebox:gpu0'), 'free');
  assert.ok(!existsSync(join(stack.dataDir, 'never')));
});

test('bad input and the wrong credential: every new route and flag is refused with a code and a sentence', async () => {
  await stack.startWorker('edgebox', 1);
  const cred = (stack as unknown as { hostCredentials: Map<string, string> }).hostCredentials.get('edgebox')!;
  for (const [method, path, body] of [
    ['POST', '/api/admin/hosts/edgebox/off', {}],
    ['POST', '/api/admin/hosts/edgebox/on', {}],
    ['DELETE', '/api/admin/hosts/edgebox', undefined],
  ] as const) {
    const asClient = await stack.api(method, path, body);
    assert.equal(asClient.status, 403, `${method} ${path} with a client token`);
    assert.deepEqual((asClient.body as { error: { code: string } }).error.code, 'forbidden');
    assert.equal((await stack.api(method, path, body, cred)).status, 403, `${method} ${path} with a host credential`);
    assert.equal((await stack.api(method, path, body, null)).status, 401, `${method} ${path} with no token`);
    const unknown = await stack.api(method, path.replace('edgebox', 'nosuchhost'), body, stack.adminToken);
    assert.equal(unknown.status, 404);
    assert.match((unknown.body as { error: { message: string } }).error.message, /no host is named nosuchhost/);
  }
  const bad = async (method: string, path: string, body: unknown, re: RegExp) => {
    const r = await stack.api(method, path, body, stack.adminToken);
    assert.equal(r.status, 400, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    assert.match((r.body as { error: { message: string } }).error.message, re);
  };
  await bad('POST', '/api/admin/hosts/edgebox/off', { reason: 'x'.repeat(501) }, /reason/);
  await bad('POST', '/api/admin/hosts/edgebox/off', { reason: 5 }, /reason/);
  await bad('POST', '/api/admin/hosts/edgebox/off', { force: true }, /force/);
  await bad('POST', '/api/admin/hosts/edgebox/on', { reason: 'x' }, /reason/);
  await bad('POST', '/api/admin/hosts/edgebox/off', '{not json', /JSON/i);
  await bad('GET', '/api/hosts?all=yes', undefined, /all: "yes" is not 1 or 0/);
  await bad('GET', '/api/devices?all=2', undefined, /all: "2" is not 1 or 0/);
  for (const since of ['abc', '0', '400d', '-1h', '7x'])
    await bad('GET', `/api/audit?since=${encodeURIComponent(since)}`, undefined, /since: a duration from 1s to 366d/);
  // The admin's session cookie: from another origin, or without saying it is JSON, nothing changes.
  const own = new URL(stack.controllerUrl).origin;
  const evil = `http://127.0.0.1:${Number(new URL(stack.controllerUrl).port) + 1}`;
  const cookie = await stack.signIn(stack.adminToken);
  for (const [method, path, headers, status] of [
    ['POST', '/api/admin/hosts/edgebox/off', { origin: evil, 'content-type': 'application/json' }, 403],
    ['POST', '/api/admin/hosts/edgebox/on', { origin: evil, 'content-type': 'application/json' }, 403],
    ['DELETE', '/api/admin/hosts/edgebox', { origin: evil, 'content-type': 'application/json' }, 403],
    ['DELETE', '/api/admin/hosts/edgebox', { origin: own }, 415],
  ] as const) {
    const res = await fetch(stack.controllerUrl + path, { method, headers: { cookie, ...headers }, body: method === 'POST' ? '{}' : undefined });
    assert.equal(res.status, status, `${method} ${path} with the cookie and ${JSON.stringify(headers)}`);
  }
  const still = ((await stack.api('GET', '/api/hosts')).body as { hosts: { name: string; off: unknown }[] }).hosts.find((h) => h.name === 'edgebox');
  assert.equal(still?.off, null, 'not turned off, not removed');
  const r = await stack.api('DELETE', '/api/admin/hosts/edgebox?x=1', undefined, stack.adminToken);
  assert.equal(r.status, 200, 'an idle host is removed (an unknown query parameter is ignored, as elsewhere)');

  // The CLI: usage errors exit 2 before anything is sent; the controller's refusals keep their code.
  for (const args of [
    ['host', 'off'],
    ['host', 'on', 'a', 'b'],
    ['host', 'rm'],
    ['host', 'off', 'x', '--bogus'],
    ['hosts', 'extra'],
    ['audit', 'extra'],
  ]) {
    const u = await admin(args);
    assert.equal(u.code, 2, `rc admin ${args.join(' ')}: ${u.stderr}`);
    assert.match(u.stderr, /^rc: /);
  }
  const since = await admin(['audit', '--since', 'soon']);
  assert.equal(since.code, 2, 'a bad_request exits as a usage error');
  assert.match(since.stderr, /^rc: bad_request: since: a duration from 1s to 366d such as 30m, 12h or 7d, not "soon"\n$/);
  const asClient = await stack.cli(['admin', 'host', 'off', 'edgebox']);
  assert.equal(asClient.code, 206);
  assert.match(asClient.stderr, /forbidden: this needs an admin token/);
});
