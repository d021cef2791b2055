// rc run's placement and machine flags as submitted (issue 34): they are stored
// on the job, a free joined host is never taken for a --cloud-only job (it
// waits for a provider machine), and bad input (a machine flag beside
// --reserved-only, a negative price, --keep out of range, a provider account
// this controller does not have) is refused with nothing stored. The launches
// are test/e2e/machine-pass.test.ts's.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
// A price table whose image is absent: a launch fails at once (no container is made), so no Docker image is needed.
const CONFIG = {
  prefix: `rcc${process.pid}`,
  image: 'rc-absent:none',
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

test('bad input for the placement and machine flags is refused with nothing stored', { timeout: 60_000 }, async () => {
  const before = await stored();
  for (const [args, pattern] of [
    [['--reserved-only', '--max-price', '3'], /--max-price is for a provider machine, and --reserved-only never launches one/],
    [['--reserved-only', '--spot'], /--spot is for a provider machine, and --reserved-only never launches one/],
    [['--reserved-only', '--keep', '1m'], /--keep is for a provider machine/],
    [['--cloud-only', '--reserved-only'], /--cloud-only and --reserved-only contradict each other/],
    [['--cloud-only', '--max-price', '-1'], /--max-price must be US dollars an hour from 0\.01 to 10000/],
    [['--cloud-only', '--max-price', 'cheap'], /--max-price must be US dollars an hour/],
    [['--cloud-only', '--cloud', 'runpod'], /no configured account is runpod; the accounts are local/],
    [['--cloud', 'runpod'], /no configured account is runpod; the accounts are local/],
    [['--keep', '25h'], /--keep takes a duration from 0 \(delete at once\) to 24h/],
    [['--keep', 'soon'], /--keep takes a duration/],
    [['--cpus', '0'], /--cpus must be a whole number from 1 to 1024/],
    [['--ram', 'lots'], /--ram must be a whole number/],
    [['--cuda', 'twelve'], /--cuda takes a CUDA version such as 12\.4/],
    [['--cloud-only', '-d', 'alpha:gpu0'], /-d names a device of a joined host, and --cloud-only is for a provider machine/],
  ] as const) {
    const r = await stack.cli(['run', '--detach', ...args, '--', 'true']);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, pattern, args.join(' '));
  }
  // The API refuses the same, with its code, whatever the client.
  const body = { kind: 'run', argv: ['true'], submitter: 'tester' };
  for (const [extra, status, want, pattern] of [
    [{ placement: 'reserved', maxPrice: 3 }, 400, 'bad_cloud', /--max-price is for a provider machine, and --reserved-only never launches one/],
    [{ placement: 'reserved', cpus: 4 }, 400, 'bad_cloud', /--cpus is for a provider machine/],
    [{ placement: 'moon' }, 400, 'bad_request', /placement is any, reserved \(--reserved-only\) or cloud \(--cloud-only\)/],
    [{ placement: 'cloud', maxPrice: -1 }, 400, 'bad_request', /maxPrice must be at least 0\.01/],
    [{ placement: 'cloud', maxPrice: 'x' }, 400, 'bad_request', /maxPrice must be a number/],
    [{ placement: 'cloud', cloud: 'Not A Cloud' }, 400, 'bad_request', /cloud is a provider/],
    [{ cloud: 'runpod/lab-b' }, 400, 'bad_cloud', /no configured account is runpod\/lab-b; the accounts are local/],
    [{ placement: 'cloud', device: 'alpha:gpu0' }, 400, 'bad_cloud', /-d names a device of a joined host/],
    [{ placement: 'cloud', kind: 'hold', argv: [], ttlS: 60 }, 400, 'bad_cloud', /--cloud-only is for rc run with a command/],
    [{ keepS: 600, kind: 'hold', argv: [], ttlS: 60 }, 400, 'bad_cloud', /--keep is for rc run with a command/],
    [{ keepS: 86_401 }, 400, 'bad_request', /keepS must be at most 86400/],
    [{ keepS: -1 }, 400, 'bad_request', /keepS must be at least 0/],
    [{ keepS: 1.5 }, 400, 'bad_request', /keepS must be a whole number/],
    [{ cpus: 0 }, 400, 'bad_request', /cpus must be at least 1/],
    [{ ramGiB: 'lots' }, 400, 'bad_request', /ramGiB must be a number/],
    [{ cuda: '12' }, 400, 'bad_request', /cuda is a CUDA version such as 12\.4/],
  ] as const) {
    const r = await stack.api('POST', '/api/jobs', { ...body, ...extra });
    assert.equal(r.status, status, JSON.stringify(extra));
    assert.equal(code(r.body), want, JSON.stringify(extra));
    assert.match(message(r.body), pattern, JSON.stringify(extra));
  }
  // Wrong credentials: refused before anything is looked at.
  const anon = await stack.api('POST', '/api/jobs', { ...body, placement: 'cloud' }, null);
  assert.equal(anon.status, 401);
  assert.equal(await stored(), before, 'nothing was stored');
});

test('a --cloud-only job is stored with its flags and never takes a free joined host', { timeout: 60_000 }, async () => {
  // alpha is busy a moment, so the --cloud-only job (it would fit alpha: no --gpu) is queued ahead of a
  // lower-priority plain job when alpha frees.
  const busy = await stack.cli(['run', '--detach', '--', 'sleep', '2']);
  assert.equal(busy.code, 0, busy.stderr);
  const r = await stack.cli([
    'run',
    '--detach',
    '--cloud-only',
    '--cloud',
    'local',
    '--max-price',
    '$2.50',
    '--spot',
    '--cpus',
    '2',
    '--ram',
    '8',
    '--cuda',
    '12.4',
    '--keep',
    '90s',
    '--',
    'true',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const id = r.stdout.trim();
  const [row] = await database.client`
    select placement, cloud, max_price_per_hour, spot, machine_min, keep_s, restarts from jobs where id = ${id}`;
  // --spot without --restarts: 10 restarts (a spot machine may be taken back).
  assert.deepEqual(
    { ...row },
    {
      placement: 'cloud',
      cloud: 'local',
      maxPricePerHour: 2.5,
      spot: true,
      machineMin: { cpus: 2, ramGiB: 8, cuda: '12.4' },
      keepS: 90,
      restarts: 10,
    },
  );
  // The pass that ran when alpha freed passed the --cloud-only job over: the plain job behind it took alpha.
  const plain = await stack.cli(['run', '--priority', '-1', '--', 'true']);
  assert.equal(plain.code, 0, plain.stderr);
  const job = await stack.job(id);
  assert.equal(job.state, 'queued');
  const [leases] = await database.client<{ n: number }[]>`select count(*)::int as n from leases where job_id = ${id}`;
  assert.equal(leases!.n, 0);
  // Without the flags nothing changed: the columns keep their defaults.
  const [plainRow] = await database.client`
    select placement, cloud, machine_min, keep_s, restarts from jobs where id <> ${id} order by created_at desc limit 1`;
  assert.deepEqual({ ...plainRow }, { placement: 'any', cloud: null, machineMin: null, keepS: null, restarts: 0 });
  await stack.cli(['kill', id]);
  // No H100 is joined: --gpu H100 is still accepted for --cloud-only (a launched machine will have one), refused without it.
  const h100 = await stack.cli(['run', '--detach', '--cloud-only', '--gpu', 'H100', '--', 'true']);
  assert.equal(h100.code, 0, h100.stderr);
  await stack.cli(['kill', h100.stdout.trim()]);
  const joined = await stack.cli(['run', '--detach', '--gpu', 'H100', '--', 'true']);
  assert.notEqual(joined.code, 0);
  // Refused as before, and told how to run it on a provider machine (this controller has an account).
  assert.match(joined.stderr, /no device could ever satisfy --gpu H100.*; or add --cloud-only to run it on a provider machine \(rc offers lists them\)/);
});
