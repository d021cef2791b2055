// rc run --cloud-only as submitted (issue 34, third slice, step 1): its flags are
// stored on the job, a free joined host is never taken for it (it waits for a
// machine launched for it), and bad input (a flag without --cloud-only, a
// negative price, a provider account this controller does not have) is refused
// with nothing stored. The launch itself is the next step's.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
// A price table only: nothing here launches, so no Docker is needed.
const CONFIG = {
  prefix: `rcc${process.pid}`,
  image: 'rc-job:stock',
  offers: [{ offerId: 'h100', gpuModel: 'H100', gpuCount: 1, vramGiB: 80, cpus: 4, ramGiB: 16, diskGiB: 50, pricePerHour: 2.1 }],
};

type Support = typeof import('../../test/support');
let stack: Stack;
let database: ReturnType<Support['connect']>;

before(async () => {
  const support = (await import(join(ROOT, 'dist/test-support.js'))) as Support;
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }], controllerEnv: { RC_LOCAL_PROVIDER: JSON.stringify(CONFIG) } });
  database = support.connect(stack.dbUrl, 2);
});
after(async () => {
  await database.close();
  await stack.stop();
});

const code = (body: unknown) => (body as { error?: { code?: string } }).error?.code;
const message = (body: unknown) => (body as { error?: { message?: string } }).error?.message ?? '';
const stored = async () => (await database.client<{ n: number }[]>`select count(*)::int as n from jobs`)[0]!.n;

test('bad input for --cloud-only and its flags is refused with nothing stored', { timeout: 60_000 }, async () => {
  const before = await stored();
  for (const [args, pattern] of [
    [['--max-price', '3'], /--max-price is for a machine launched for the job: add --cloud-only/],
    [['--spot'], /--spot is for a machine launched for the job: add --cloud-only/],
    [['--cloud', 'local'], /--cloud is for a machine launched for the job: add --cloud-only/],
    [['--cloud-only', '--max-price', '-1'], /--max-price must be US dollars an hour from 0\.01 to 10000/],
    [['--cloud-only', '--max-price', 'cheap'], /--max-price must be US dollars an hour/],
    [['--cloud-only', '--cloud', 'runpod'], /no configured account is runpod; the accounts are local/],
  ] as const) {
    const r = await stack.cli(['run', '--detach', ...args, '--', 'true']);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, pattern, args.join(' '));
  }
  // The API refuses the same, with its code, whatever the client.
  const body = { kind: 'run', argv: ['true'], submitter: 'tester' };
  for (const [extra, status, want, pattern] of [
    [{ maxPrice: 3 }, 400, 'bad_cloud', /--max-price bounds the price of a launched machine: add --cloud-only/],
    [{ spot: true }, 400, 'bad_cloud', /add --cloud-only/],
    [{ cloud: 'local' }, 400, 'bad_cloud', /add --cloud-only/],
    [{ cloudOnly: true, maxPrice: -1 }, 400, 'bad_request', /maxPrice must be at least 0\.01/],
    [{ cloudOnly: true, maxPrice: 'x' }, 400, 'bad_request', /maxPrice must be a number/],
    [{ cloudOnly: true, cloud: 'Not A Cloud' }, 400, 'bad_request', /cloud is a provider/],
    [{ cloudOnly: true, cloud: 'runpod/lab-b' }, 400, 'bad_cloud', /no configured account is runpod\/lab-b; the accounts are local/],
    [{ cloudOnly: true, device: 'alpha:gpu0' }, 400, 'bad_cloud', /-d names a device of a joined host/],
    [{ cloudOnly: true, kind: 'hold', argv: [], ttlS: 60 }, 400, 'bad_cloud', /--cloud-only is for rc run with a command/],
  ] as const) {
    const r = await stack.api('POST', '/api/jobs', { ...body, ...extra });
    assert.equal(r.status, status, JSON.stringify(extra));
    assert.equal(code(r.body), want, JSON.stringify(extra));
    assert.match(message(r.body), pattern, JSON.stringify(extra));
  }
  const array = await stack.api('POST', '/api/arrays', { array: '0-1', job: { ...body, cloudOnly: true } });
  assert.equal(array.status, 400);
  assert.match(message(array.body), /--cloud-only launches one machine per job/);
  // Wrong credentials: refused before anything is looked at.
  const anon = await stack.api('POST', '/api/jobs', { ...body, cloudOnly: true }, null);
  assert.equal(anon.status, 401);
  assert.equal(await stored(), before, 'nothing was stored');
});

test('a --cloud-only job is stored with its flags and never takes a free joined host', { timeout: 60_000 }, async () => {
  // alpha is busy a moment, so the --cloud-only job (it would fit alpha: no --gpu) is queued ahead of a
  // lower-priority plain job when alpha frees.
  const busy = await stack.cli(['run', '--detach', '--', 'sleep', '2']);
  assert.equal(busy.code, 0, busy.stderr);
  const r = await stack.cli(['run', '--detach', '--cloud-only', '--cloud', 'local', '--max-price', '$2.50', '--spot', '--', 'true']);
  assert.equal(r.code, 0, r.stderr);
  const id = r.stdout.trim();
  const [row] = await database.client<{ cloudOnly: boolean; cloud: string; maxPricePerHour: number; spot: boolean }[]>`
    select cloud_only, cloud, max_price_per_hour, spot from jobs where id = ${id}`;
  assert.deepEqual(row, { cloudOnly: true, cloud: 'local', maxPricePerHour: 2.5, spot: true });
  // The pass that ran when alpha freed passed the --cloud-only job over: the plain job behind it took alpha.
  const plain = await stack.cli(['run', '--priority', '-1', '--', 'true']);
  assert.equal(plain.code, 0, plain.stderr);
  const job = await stack.job(id);
  assert.equal(job.state, 'queued');
  const [leases] = await database.client<{ n: number }[]>`select count(*)::int as n from leases where job_id = ${id}`;
  assert.equal(leases!.n, 0);
  // Without --cloud-only nothing changed: the columns keep their defaults.
  const [plainRow] = await database.client<{ cloudOnly: boolean; cloud: string | null }[]>`
    select cloud_only, cloud from jobs where id <> ${id} order by created_at desc limit 1`;
  assert.deepEqual(plainRow, { cloudOnly: false, cloud: null });
  await stack.cli(['kill', id]);
  // No H100 is joined: --gpu H100 is still accepted for --cloud-only (a launched machine will have one), refused without it.
  const h100 = await stack.cli(['run', '--detach', '--cloud-only', '--gpu', 'H100', '--', 'true']);
  assert.equal(h100.code, 0, h100.stderr);
  await stack.cli(['kill', h100.stdout.trim()]);
  const joined = await stack.cli(['run', '--detach', '--gpu', 'H100', '--', 'true']);
  assert.notEqual(joined.code, 0);
});
