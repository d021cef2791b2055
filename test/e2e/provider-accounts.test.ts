// Provider accounts are the controller's settings (issue 34, items 7 and 8):
// a wrong RunPod setting stops the controller at start-up with a sentence (and
// never the key); an account added, changed or removed between two starts is
// audited, actor `settings`, with a fingerprint of its key and never the key;
// and the key never reaches the local worker or a job it runs. No RunPod here:
// its URLs point at a closed port, and nothing in these tests calls them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { descendantsOf, Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
const KEY = `rpa_${process.pid}_FIRSTKEYabcdefghijklmnop`;
const ROTATED = `rpa_${process.pid}_SECONDKEYqrstuvwxyz012345`;
// A closed port: were anything to call RunPod, it would fail here, never leave the machine.
const NOWHERE = { RC_RUNPOD_REST_URL: 'http://127.0.0.1:9/v1', RC_RUNPOD_GRAPHQL_URL: 'http://127.0.0.1:9/graphql' };
const LOCAL = (prefix: string) =>
  JSON.stringify({
    prefix,
    offers: [{ offerId: 'l4', gpuModel: 'L4', gpuCount: 1, vramGiB: 24, cpus: 4, ramGiB: 16, diskGiB: 50, pricePerHour: 0.7 }],
  });

const stacks: Stack[] = [];
const dirs: string[] = [];
after(async () => {
  for (const s of stacks) await s.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('a wrong RunPod setting stops the controller at start-up, saying what is wrong, never the key', { timeout: 120_000 }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'rc-accounts-'));
  dirs.push(dataDir);
  const good = { RC_RUNPOD_API_KEY: KEY, RC_RUNPOD_IMAGE: 'docker.io/library/node:22', ...NOWHERE };
  for (const [env, said] of [
    [{ ...good, RC_RUNPOD_API_KEY: `${KEY} ` }, /RC_RUNPOD_API_KEY: a RunPod API key is 8 to 256 letters, digits, _ and -/],
    [{ ...good, RC_RUNPOD_API_KEY: `${KEY}\n` }, /RC_RUNPOD_API_KEY: .*paste the key alone/],
    [{ ...good, RC_RUNPOD_API_KEY: `"${KEY}"` }, /RC_RUNPOD_API_KEY: /],
    [{ ...good, RC_RUNPOD_API_KEY: 'short' }, /RC_RUNPOD_API_KEY: /],
    [{ ...good, RC_RUNPOD_IMAGE: '' }, /RC_RUNPOD_IMAGE: required with RC_RUNPOD_API_KEY/],
    [{ RC_RUNPOD_API_KEY: KEY }, /RC_RUNPOD_IMAGE: required with RC_RUNPOD_API_KEY/],
    [{ ...good, RC_RUNPOD_IMAGE: 'node 22' }, /RC_RUNPOD_IMAGE: an image reference/],
    [{ ...good, RC_RUNPOD_ACCOUNT: 'Lab B' }, /RC_RUNPOD_ACCOUNT: an account name is/],
    [{ ...good, RC_RUNPOD_PREFIX: '-rc' }, /RC_RUNPOD_PREFIX: a prefix is/],
    [{ ...good, RC_RUNPOD_REST_URL: 'ftp://rest.runpod.io/v1' }, /RC_RUNPOD_REST_URL must be an http:\/\/ or https:\/\/ URL/],
    [{ ...good, RC_RUNPOD_GRAPHQL_URL: 'not a url' }, /RC_RUNPOD_GRAPHQL_URL/],
    // Two accounts of one controller with one prefix (or one starting with the other's): each sweep would delete the other's machines.
    [
      { ...good, RC_RUNPOD_PREFIX: 'rcshared', RC_LOCAL_PROVIDER: LOCAL('rcshared') },
      /RC_RUNPOD_PREFIX: runpod\/default's prefix "rcshared" clashes with local's "rcshared" \(RC_LOCAL_PROVIDER\): the sweeper would delete each other's machines/,
    ],
    [{ ...good, RC_RUNPOD_PREFIX: 'rcshared-gpu', RC_LOCAL_PROVIDER: LOCAL('rcshared') }, /RC_RUNPOD_PREFIX: .*clashes with local's "rcshared"/],
  ] as const) {
    const r = spawnSync(process.execPath, [join(ROOT, 'dist/server.js')], {
      // No DATABASE_URL and a data folder of its own: a start that got past its settings would show as an embedded Postgres.
      env: { PATH: process.env.PATH, RC_DATA_DIR: dataDir, PORT: '0', RC_LOCAL_WORKER: '0', RC_DASHBOARD: '0', ...env } as unknown as NodeJS.ProcessEnv,
      encoding: 'utf8',
      timeout: 20_000,
    });
    const out = r.stderr + r.stdout;
    assert.equal(r.status, 1, `${JSON.stringify(env)}: ${out}`);
    assert.match(out, /\[rc\] could not start: bad environment variable /, out);
    assert.match(out, said, out);
    assert.ok(!out.includes(KEY), `the key is not in what it says: ${out}`);
  }
  // The control, settings that start: the next test (two accounts, prefixes of their own).
});

type Audit = { action: string; actor: string; target: string; detail: Record<string, unknown>; origin: string | null; tokenId: number | null };

test('an account added, changed (prefix, image, key rotated) or removed between two starts is audited once, never with its key', {
  timeout: 180_000,
}, async () => {
  const first = {
    RC_RUNPOD_API_KEY: KEY,
    RC_RUNPOD_IMAGE: 'ghcr.io/lab/rc-pod:1',
    RC_RUNPOD_ACCOUNT: 'lab-b',
    RC_RUNPOD_PREFIX: 'rclabb',
    RC_LOCAL_PROVIDER: LOCAL('rclocal'),
    ...NOWHERE,
  };
  const stack = await Stack.start({ workers: [], controllerEnv: first });
  stacks.push(stack);
  const support = (await import(join(ROOT, 'dist/test-support.js'))) as typeof import('../support');
  const database = support.connect(stack.dbUrl, 1);
  try {
    const audits = async () => [
      ...(await database.client<Audit[]>`select action, actor, target, detail, origin, token_id from audit where action like 'provider_account.%' order by id`),
    ];
    const fingerprint = (key: string) => support.credentialFingerprint(key);
    assert.deepEqual(await audits(), [
      {
        action: 'provider_account.add',
        actor: 'settings',
        target: 'local',
        detail: { account: 'local', provider: 'local', prefix: 'rclocal', image: 'rc-job:stock', credential: null },
        origin: null,
        tokenId: null,
      },
      {
        action: 'provider_account.add',
        actor: 'settings',
        target: 'runpod/lab-b',
        detail: { account: 'runpod/lab-b', provider: 'runpod', prefix: 'rclabb', image: 'ghcr.io/lab/rc-pod:1', credential: fingerprint(KEY) },
        origin: null,
        tokenId: null,
      },
    ]);
    assert.match(stack.controllerLog, /provider account runpod\/lab-b: add \(audited\)/);

    // The same settings again: nothing to audit.
    await stack.stopController();
    await stack.startController();
    assert.equal((await audits()).length, 2);

    // The key rotated, the prefix and image changed, the local account gone.
    await stack.stopController();
    const { RC_LOCAL_PROVIDER: _, ...rest } = first;
    stack.controllerEnv = { ...stack.controllerEnv, ...rest, RC_RUNPOD_API_KEY: ROTATED, RC_RUNPOD_PREFIX: 'rclabb2', RC_RUNPOD_IMAGE: 'ghcr.io/lab/rc-pod:2' };
    delete stack.controllerEnv.RC_LOCAL_PROVIDER;
    await stack.startController();
    const now = await audits();
    assert.deepEqual(
      now.slice(2).map((a) => [a.action, a.actor, a.target, a.detail]),
      [
        [
          'provider_account.change',
          'settings',
          'runpod/lab-b',
          {
            provider: 'runpod',
            prefix: { from: 'rclabb', to: 'rclabb2' },
            image: { from: 'ghcr.io/lab/rc-pod:1', to: 'ghcr.io/lab/rc-pod:2' },
            credential: { what: 'rotated', from: fingerprint(KEY), to: fingerprint(ROTATED) },
          },
        ],
        ['provider_account.remove', 'settings', 'local', { provider: 'local', prefix: 'rclocal' }],
      ],
    );

    // No key anywhere in the audit log or the record, in any form the test can think of.
    const everything = JSON.stringify(await database.client`select * from audit`) + JSON.stringify(await database.client`select * from provider_accounts`);
    for (const key of [KEY, ROTATED]) {
      assert.ok(!everything.includes(key), 'no key in the audit log or provider_accounts');
      assert.ok(!everything.includes(key.slice(4, 20)), 'no part of a key either');
      assert.ok(!stack.controllerLog.includes(key), "no key in the controller's log");
    }
    assert.ok(everything.includes(fingerprint(ROTATED)), 'the fingerprint is recorded (the control)');

    // The audit log shows them like any other row, to an admin.
    const listed = await stack.cli(['admin', 'audit', '--action', 'provider_account.*', '--json'], { env: { RC_TOKEN: stack.adminToken } });
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as { action: string; actor: string; target: string }[] | { entries: { action: string }[] };
    const actions = (Array.isArray(rows) ? rows : rows.entries).map((r) => r.action);
    assert.deepEqual(actions.sort(), ['provider_account.add', 'provider_account.add', 'provider_account.change', 'provider_account.remove']);
  } finally {
    await database.close();
  }
});

test('the RunPod key never reaches the local worker nor a job it runs', { timeout: 180_000 }, async () => {
  const host = `acct${process.pid}`;
  const stack = await Stack.start({
    workers: [],
    controllerEnv: {
      RC_LOCAL_WORKER: '1',
      RC_HOST_NAME: host,
      RC_RUNPOD_API_KEY: KEY,
      RC_RUNPOD_IMAGE: 'ghcr.io/lab/rc-pod:1',
      RC_LOCAL_PROVIDER: LOCAL('rclocal'),
      ...NOWHERE,
    },
  });
  stacks.push(stack);
  await stack.waitFor(
    async () => (await stack.devices()).filter((d) => d.name.startsWith(`${host}:`) && d.state === 'free').length > 0,
    'the local worker to be connected',
    60_000,
  );
  const controller = stack.controllerPid!;
  const worker = descendantsOf(controller).find((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(join('dist', 'worker.js')));
  assert.ok(worker, 'the local worker runs');
  const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8');
  // The control: the controller was started with the key (this test reads its environment as root).
  assert.ok(environ(controller).includes(KEY), "the controller's environment holds the key");
  assert.ok(!environ(worker).includes(KEY), "the local worker's environment holds no RunPod key");
  assert.doesNotMatch(environ(worker), /RC_RUNPOD_|RC_LOCAL_PROVIDER=/, "the local worker's environment holds no provider setting");

  // The job prints its environment and tries the controller's and the worker's.
  const run = await stack.cli([
    'run',
    '--',
    'sh',
    '-c',
    `env; echo ---; for p in ${controller} ${worker}; do tr '\\0' '\\n' < /proc/$p/environ 2>&1; done; echo done`,
  ]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^RC_JOB_ID=/m, 'the job printed its environment');
  assert.match(run.stdout, /done\n$/);
  assert.ok(!run.stdout.includes(KEY), `the job saw the key:\n${run.stdout}`);
  // As root the local worker runs its jobs as a user of their own, who may not read either process's environment.
  assert.equal((run.stderr.match(/Permission denied/g) ?? []).length, 2, run.stderr);
  assert.doesNotMatch(run.stdout, /RC_RUNPOD_/);
});
