// rc offers, rc machines and their routes on a stack with the local provider,
// on real Docker (issue 34, second slice): offers from its price table sorted by
// price with simulated prices marked; a launched machine listed with its cost so
// far, the JOB it is for and IDLE UNTIL (every machine's cost by team below),
// and deleted by rc machines rm (its container gone, audited with why);
// each route's wrong credentials and bad input; a cross-origin cookie DELETE refused.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Docker from 'dockerode';
import { MachineListSchema } from '../../protocol/cli-json';
import { STOCK_IMAGE, stockImageSkip } from '../helpers/docker';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
const IMAGE = STOCK_IMAGE;
const docker = new Docker();
const skip = stockImageSkip('the machines test');

const PREFIX = `rcm${process.pid}`;
const CONFIG = {
  prefix: PREFIX,
  image: IMAGE,
  offers: [
    { offerId: 'h100x2', gpuModel: 'H100', gpuCount: 2, vramGiB: 80, cpus: 8, ramGiB: 64, diskGiB: 200, cuda: '12.4', pricePerHour: 4.5 },
    { offerId: 'a100', gpuModel: 'A100-80GB', gpuCount: 1, vramGiB: 80, cpus: 4, ramGiB: 32, diskGiB: 100, pricePerHour: 2.1 },
    { offerId: 'l4', gpuModel: 'L4', gpuCount: 1, vramGiB: 24, cpus: 4, ramGiB: 16, diskGiB: 50, pricePerHour: 0.7 },
  ],
};

type Support = typeof import('../../test/support');
let support: Support;
let stack: Stack;
let database: ReturnType<Support['connect']>;
const made = new Set<string>();

before(async () => {
  if (skip) return;
  support = (await import(join(ROOT, 'dist/test-support.js'))) as Support;
  stack = await Stack.start({ workers: [], controllerEnv: { RC_LOCAL_PROVIDER: JSON.stringify(CONFIG) } });
  database = support.connect(stack.dbUrl, 2);
});
after(async () => {
  if (skip) return;
  for (const name of made)
    await docker
      .getContainer(name)
      .remove({ force: true })
      .catch(() => {});
  await database.close();
  await stack.stop();
});

const code = (body: unknown) => (body as { error?: { code?: string } }).error?.code;
const message = (body: unknown) => (body as { error?: { message?: string } }).error?.message ?? '';

test('rc offers: the local table cheapest first, simulated prices marked; the filters narrow it', { skip, timeout: 60_000 }, async () => {
  const all = await stack.cli(['offers']);
  assert.equal(all.code, 0, all.stderr);
  const lines = all.stdout.trim().split('\n');
  assert.match(lines[0]!, /^CLOUD\s+GPU\s+VRAM\s+CPUS\s+RAM\s+\$\/H\s+SPOT\s+REGION$/);
  assert.match(lines[1]!, /^local\s+1x L4\s+24G\s+4\s+16G\s+0\.70\*\s+-\s+local$/);
  assert.match(lines[2]!, /1x A100-80GB .* 2\.10\*/);
  assert.match(lines[3]!, /2x H100 .* 4\.50\*/);
  assert.match(all.stdout, /\* simulated price/);
  assert.equal(all.stderr, '');

  const a100 = await stack.cli(['offers', '--gpu', 'A100', '--json']);
  assert.equal(a100.code, 0, a100.stderr);
  assert.deepEqual(
    (JSON.parse(a100.stdout) as { offers: { offerId: string; simulated: boolean }[] }).offers.map((o) => [o.offerId, o.simulated]),
    [['a100', true]],
  );
  const big = await stack.cli(['offers', '--cpus', '8', '--ram', '64', '--cuda', '12.0', '--max-price', '5', '--limit', '1', '--cloud', 'local']);
  assert.equal(big.code, 0, big.stderr);
  assert.match(big.stdout, /2x H100/);
  assert.doesNotMatch(big.stdout, /L4|A100/);
  const cheap = await stack.cli(['offers', '--max-price', '1', '--json']);
  assert.deepEqual(
    (JSON.parse(cheap.stdout) as { offers: { offerId: string }[] }).offers.map((o) => o.offerId),
    ['l4'],
  );
  const two = await stack.cli(['offers', '--limit', '2', '--json']);
  assert.deepEqual(
    (JSON.parse(two.stdout) as { offers: { offerId: string }[] }).offers.map((o) => o.offerId),
    ['l4', 'a100'],
  );
});

test('GET /api/offers: bad input is a 400 with a sentence, never a 500; no credential 401, a host 403', { skip, timeout: 60_000 }, async () => {
  const bad: [string, RegExp][] = [
    ['max-price=-1', /max-price/],
    ['max-price=abc', /max-price/],
    ['cpus=0', /cpus/],
    ['cpus=1.5', /cpus/],
    ['ram=x', /ram/],
    ['disk=-5', /disk/],
    ['limit=0', /limit/],
    ['limit=201', /limit/],
    ['spot=yes', /spot/],
    ['cuda=twelve', /cuda/],
    ['gpu=A100:9', /gpu/],
    ['gpu=', /gpu/],
    ['cloud=nosuch', /no configured account is nosuch; the accounts are local/],
    ['cloud=BAD%20NAME', /cloud/],
    ['colour=blue', /not a filter of offers/],
  ];
  for (const [q, pattern] of bad) {
    const r = await stack.api('GET', `/api/offers?${q}`);
    assert.equal(r.status, 400, `${q}: ${JSON.stringify(r.body)}`);
    assert.equal(code(r.body), 'bad_request', q);
    assert.match(message(r.body), pattern, q);
  }
  const cli = await stack.cli(['offers', '--max-price', '-1']);
  assert.notEqual(cli.code, 0);
  assert.match(cli.stderr, /max-price/);
  assert.equal((await stack.api('GET', '/api/offers', undefined, null)).status, 401);
  const hostKey = (await stack.api('POST', '/api/admin/hosts', { name: 'offers-host' }, stack.adminToken)).body as { credential: string };
  for (const path of ['/api/offers', '/api/machines']) assert.equal((await stack.api('GET', path, undefined, hostKey.credential)).status, 403, path);
  assert.equal((await stack.api('GET', '/api/machines', undefined, null)).status, 401);
  const m = await stack.api('GET', '/api/machines?all=yes');
  assert.equal(m.status, 400);
  assert.match(message(m.body), /all/);
  assert.equal((await stack.api('GET', '/api/machines?state=idle')).status, 400);
});

test('rc machines: a launched machine with its cost so far, JOB and IDLE UNTIL, the cost of every machine by team; rc machines rm deletes it (client refused, admin done, audited); --all', {
  skip,
  timeout: 120_000,
}, async () => {
  const parsed = support.parseLocalProviderConfig(JSON.stringify(CONFIG));
  assert.ok('config' in parsed);
  const provider = new support.LocalProvider(parsed.config);
  const deps = {
    db: database.db,
    sql: database.client,
    providers: new Map([[provider.account, provider]]),
    controllerUrl: stack.controllerUrl,
    launchTimeoutS: 600,
    log: () => {},
  };
  const l4 = (await provider.offers({})).find((o) => o.offerId === 'l4')!;
  const m = await support.launchMachine(deps, l4);
  made.add(m.instanceName);
  // A machine that ran an hour, two hours ago, at $2.10 an hour: it cost $2.10.
  // (Deleted while it was kept idle: its idle_until stays in the row, and means nothing now.)
  await database.client`insert into machines (id, account, instance_name, offer, price_per_hour, spot, simulated, state, host_name, terminated_why, created_at, terminated_at, idle_until)
    values ('m0000000old', 'local', ${`${PREFIX}-m0000000old`}, ${JSON.stringify({ gpuModel: 'A100-80GB', gpuCount: 1 })}::text::jsonb, 2.1, false, true,
      'terminated', 'gone-host', 'rm by someone', now() - interval '2 hours', now() - interval '1 hour', now() + interval '1 hour')`;

  const live = await stack.cli(['machines']);
  assert.equal(live.code, 0, live.stderr);
  assert.match(live.stdout, /^ID\s+STATE\s+CLOUD\s+GPU\s+\$\/H\s+JOB\s+IDLE UNTIL\s+COST$/m);
  assert.match(live.stdout, new RegExp(`${m.id}\\s+(booting|idle)\\s+local\\s+1x L4\\s+0\\.70\\*\\s+-\\s+-\\s+\\$0\\.\\d\\d\\*`));
  assert.doesNotMatch(live.stdout.split('\n\n')[0]!, /m0000000old/, 'a terminated machine only with --all');
  // Below, every machine's cost so far, terminated ones too: the old machine's $2.10 and the new one's, all idle (no job ran).
  assert.match(live.stdout, /^cost so far, every machine \(terminated ones too\): \$2\.1\d\*$/m);
  assert.match(live.stdout, /^TEAM\s+COST\nidle\s+\$2\.1\d\*$/m);
  assert.match(live.stdout, /\* simulated price/);
  const all = await stack.cli(['machines', '--all', '--json']);
  const whole = MachineListSchema.parse(JSON.parse(all.stdout));
  assert.ok(Math.abs(whole.costs.idle.cost - whole.costs.total.cost) < 1e-9 && whole.costs.total.cost > 2.1, JSON.stringify(whole.costs));
  assert.deepEqual([whole.costs.byTeam, whole.costs.byJob, whole.costs.total.simulated], [[], [], true]);
  const listed = whole.machines;
  const old = listed.find((x) => x.id === 'm0000000old')!;
  assert.equal(old.state, 'terminated');
  assert.equal(old.idleUntil, null, 'no IDLE UNTIL once terminated');
  assert.ok(Math.abs(old.costSoFar - 2.1) < 0.01, String(old.costSoFar));
  assert.ok(listed.some((x) => x.id === m.id));

  // A machine for a job now, and an idle one kept until 4½ minutes from now: JOB and IDLE UNTIL (a local time, in 4m).
  await database.client`insert into machines (id, account, instance_name, offer, price_per_hour, spot, simulated, state, host_name, job_id, idle_until)
    values ('m000000busy', 'runpod/lab', 'rc-m000000busy', ${JSON.stringify({ gpuModel: 'H100', gpuCount: 8 })}::text::jsonb, 20, true, false, 'busy',
      'busy-host', 'j0000000job', null),
    ('m000000idle', 'runpod/lab', 'rc-m000000idle', '{}'::jsonb, 1.25, false, false, 'idle', 'idle-host', null, now() + interval '270 seconds')`;
  const shown = await stack.cli(['machines']);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^m000000busy\s+busy\s+runpod\/lab\s+8x H100\s+20\.00 spot\s+j0000000job\s+-\s+\$0\.\d\d$/m);
  assert.match(shown.stdout, /^m000000idle\s+idle\s+runpod\/lab\s+-\s+1\.25\s+-\s+\d\d:\d\d:\d\d \(in 4m\)\s+\$0\.00$/m);
  const keptJson = MachineListSchema.parse(JSON.parse((await stack.cli(['machines', '--json'])).stdout));
  const idleOne = keptJson.machines.find((x) => x.id === 'm000000idle')!;
  assert.ok(Math.abs(Date.parse(idleOne.idleUntil!) - Date.now() - 270_000) < 30_000, idleOne.idleUntil!);
  assert.equal(keptJson.machines.find((x) => x.id === 'm000000busy')!.jobId, 'j0000000job');
  await database.client`delete from machines where id in ('m000000busy', 'm000000idle')`;

  // Deleting: a client token is refused (a person with an admin token or session deletes), bad ids are 400, unknown 404.
  const asClient = await stack.cli(['machines', 'rm', m.id]);
  assert.notEqual(asClient.code, 0);
  assert.match(asClient.stderr, /forbidden|admin/i);
  assert.equal((await stack.api('DELETE', `/api/machines/${m.id}`, undefined, null)).status, 401);
  assert.equal((await stack.api('DELETE', '/api/machines/not-a-machine', undefined, stack.adminToken)).status, 400);
  const none = await stack.api('DELETE', '/api/machines/m0000000000', undefined, stack.adminToken);
  assert.equal(none.status, 404);
  assert.equal(code(none.body), 'not_found');
  assert.equal(await containerExists(m.instanceName), true, 'still there after the refusals');

  // A machine on an account this controller has no settings for: refused with a sentence (never a 500), nothing changed.
  await database.client`insert into machines (id, account, instance_name, offer, price_per_hour, spot, simulated, state, host_name)
    values ('m0000orphan', 'runpod/gone', 'rc-m0000orphan', '{}'::jsonb, 1, false, false, 'idle', 'orphan-host')`;
  const orphan = await stack.api('DELETE', '/api/machines/m0000orphan', undefined, stack.adminToken);
  assert.equal(orphan.status, 409, JSON.stringify(orphan.body));
  assert.equal(code(orphan.body), 'conflict');
  assert.match(JSON.stringify(orphan.body), /account runpod\/gone, which this controller has no settings for/);
  const [kept] = await database.client<{ state: string }[]>`select state from machines where id = 'm0000orphan'`;
  assert.equal(kept!.state, 'idle', 'nothing was changed');
  await database.client`delete from machines where id = 'm0000orphan'`;

  const rm = await stack.cli(['machines', 'rm', m.id], { env: { RC_TOKEN: stack.adminToken } });
  assert.equal(rm.code, 0, rm.stderr);
  assert.match(rm.stdout, new RegExp(`${m.id}: terminated \\(rm by `));
  assert.equal(await containerExists(m.instanceName), false);
  const audits = await database.client<{ action: string; actor: string; tokenId: number | null; why: string | null }[]>`
    select action, actor, token_id as "tokenId", detail->>'why' as why from audit where target = ${m.id} order by id`;
  const t = audits.find((a) => a.action === 'machine.terminate')!;
  assert.ok(t, JSON.stringify(audits));
  assert.match(t.actor, /^admin:/);
  assert.match(t.why ?? '', /^rm by /);
  assert.notEqual(t.tokenId, null, 'the token is in the audit');
});

test('DELETE /api/machines/:id with an admin session cookie from another origin is refused; the machine stays', { skip, timeout: 60_000 }, async () => {
  await database.client`insert into machines (id, account, instance_name, offer, price_per_hour, spot, simulated, state, host_name)
    values ('m000000csrf', 'local', ${`${PREFIX}-m000000csrf`}, '{}'::jsonb, 1, false, true, 'idle', 'xsrf-host')`;
  const cookie = await stack.signIn(stack.adminToken);
  const evil = `http://127.0.0.1:${Number(new URL(stack.controllerUrl).port) + 1}`;
  for (const headers of [{ cookie, origin: evil }, { cookie, 'sec-fetch-site': 'same-site' }, { cookie }] as Record<string, string>[]) {
    const r = await fetch(`${stack.controllerUrl}/api/machines/m000000csrf`, { method: 'DELETE', headers });
    assert.equal(r.status, 403, JSON.stringify(headers));
  }
  const [row] = await database.client<{ state: string }[]>`select state from machines where id = 'm000000csrf'`;
  assert.equal(row!.state, 'idle');
});

async function containerExists(name: string): Promise<boolean> {
  return docker
    .getContainer(name)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}
