// What agents reached for in the CLI, against a real stack: rc run --detach
// and rc wait; --help on every command without a controller; a second
// --select ANDed; a selector character the grammar does not define refused;
// not_job_owner from another shell of the same user saying how to act as it;
// the fleet's default and maximum --max-runtime (short here: 5 s and 1 h).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 2 }], controllerEnv: { RC_MAX_RUNTIME_DEFAULT_S: '5', RC_MAX_RUNTIME_LIMIT_S: '3600' } });
});
after(async () => stack.stop());

const ID = /^j[0-9a-v]{10}\n$/;

test('rc run --detach prints the id and exits 0 at once; rc wait exits with the job’s code and prints nothing', async () => {
  const t0 = Date.now();
  const d = await stack.cli(['run', '--detach', '--', 'sh', '-c', 'sleep 1; echo out; echo err >&2; exit 3']);
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, ID);
  // It gave no --max-runtime: the fleet's default applies, said once.
  assert.equal(
    d.stderr,
    `rc: job ${d.stdout.trim()} has no --max-runtime: this fleet's default of 5s applies, and it is killed past it; give --max-runtime to choose (at most 1h)\n`,
  );
  assert.ok(Date.now() - t0 < 5000);
  const id = d.stdout.trim();
  assert.equal((await stack.job(id)).state, 'running');
  const w = await stack.cli(['wait', id]);
  assert.deepEqual([w.code, w.stdout, w.stderr], [3, '', '']);
  // Waiting on a job that has ended already answers at once, with the same code; rc logs still has its output.
  assert.equal((await stack.cli(['wait', id])).code, 3);
  assert.equal((await stack.cli(['logs', id])).stdout, 'out\n');
});

test('rc wait: a killed job gives the code rc run would, --timeout gives up with 203 and leaves the job running, bad input is refused', async () => {
  const d = await stack.cli(['run', '--detach', '--max-runtime', '1h', '--name', 'sleeper', '--', 'sleep', '30']);
  assert.equal(d.stderr, '', 'a job that gives --max-runtime is told nothing');
  const id = d.stdout.trim();
  const gaveUp = await stack.cli(['wait', 'sleeper', '--timeout', '1s']);
  assert.equal(gaveUp.code, 203);
  assert.match(gaveUp.stderr, new RegExp(`^rc: wait_timeout: job ${id} has not ended after 1s; it goes on`));
  assert.equal((await stack.job(id)).state, 'running');
  const waiting = stack.cli(['wait', id]);
  await stack.cli(['kill', id]);
  const w = await waiting;
  // As rc run exits for a job killed by SIGTERM: 128 + 15.
  assert.deepEqual([w.code, w.stdout, w.stderr], [143, '', '']);
  for (const [args, code, message] of [
    [['wait'], 2, /rc wait takes one job id/],
    [['wait', 'a', 'b'], 2, /rc wait takes one job id/],
    [['wait', id, '--timeout', 'soon'], 2, /--timeout/],
    [['wait', id, '--timeout', '0s'], 2, /--timeout/],
    [['wait', 'j0000000000'], 208, /not_found/],
    [['run', '--detach', '--tty', '--', 'sh'], 2, /--detach is for jobs with stored output/],
  ] as const) {
    const r = await stack.cli([...args]);
    assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message, args.join(' '));
  }
});

test('every command and subcommand answers --help with exit 0, even with no controller configured', async () => {
  const bare = { RC_CONTROLLER: '', RC_TOKEN: '' };
  for (const args of [
    ['--help'],
    ['run', '--help'],
    ['wait', '--help'],
    ['admin', 'token', 'create', '--help'],
    ['admin', 'host', 'off', 'x', '--help'],
    ['hold', 'extend', '--help'],
    ['ps', '-h'],
  ]) {
    const r = await stack.cli(args, { env: bare });
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stdout, /usage: rc|rc: share GPUs/, args.join(' '));
  }
  assert.match((await stack.cli(['admin', 'token', 'create', '--help'], { env: bare })).stdout, /--submitter/);
});

test('a second --select is ANDed with the first; a | in a selector is refused where it stands', async () => {
  // alpha's devices have kind=cpu-slot: the second term rules them out, so nothing could ever match.
  const both = await stack.cli(['run', '-s', 'kind=cpu-slot', '-s', 'vram>=1G', '--', 'true']);
  assert.deepEqual([both.code, both.stderr], [201, 'rc: no_matching_device: no device matches the selector: kind=cpu-slot,vram>=1G\n']);
  assert.equal((await stack.cli(['run', '-s', 'kind=cpu-slot', '-s', 'kind!=gpu', '--', 'true'])).code, 0);
  const bar = await stack.cli(['run', '-s', 'gpu_model=H100|A100', '--', 'true']);
  assert.equal(bar.code, 212);
  assert.match(bar.stderr, /^rc: bad_selector: "\|" at column 15, in term "gpu_model=H100\|A100", is not part of the selector grammar: selectors have no OR/);
  const devices = await stack.cli(['devices', '-s', 'kind=cpu-slot', '-s', 'kind=gpu']);
  assert.equal(devices.code, 0);
  assert.doesNotMatch(devices.stdout, /alpha:gpu0/);
});

test('not_job_owner for a job of the same user from another shell says how to act as that submitter', async () => {
  const d = await stack.cli(['run', '--detach', '--', 'sleep', '30'], { env: { RC_SUBMITTER: 'alice@ws1/s100' } });
  const id = d.stdout.trim();
  const other = await stack.cli(['kill', id], { env: { RC_SUBMITTER: 'alice@ws1/s200' } });
  assert.equal(other.code, 209);
  assert.equal(
    other.stderr,
    `rc: not_job_owner: job ${id} belongs to alice@ws1/s100, not alice@ws1/s200; leave it alone. You submitted it from another shell: act as that submitter with RC_SUBMITTER='alice@ws1/s100' rc kill ${id}\n`,
  );
  const stranger = await stack.cli(['kill', id], { env: { RC_SUBMITTER: 'bob@ws1/s200' } });
  assert.equal(stranger.stderr, `rc: not_job_owner: job ${id} belongs to alice@ws1/s100, not bob@ws1/s200; leave it alone\n`);
  assert.equal((await stack.cli(['kill', id], { env: { RC_SUBMITTER: 'alice@ws1/s100' } })).code, 0);
});

test('a job without --max-runtime gets the fleet’s default (shown in rc ps, said once to its submitter, enforced); more than the maximum is refused', async () => {
  const carol = { env: { RC_SUBMITTER: 'carol@ws2/s7' } };
  const first = await stack.cli(['run', '--detach', '--', 'sleep', '30'], carol);
  const id = first.stdout.trim();
  assert.match(first.stderr, new RegExp(`^rc: job ${id} has no --max-runtime: this fleet's default of 5s applies`));
  const second = await stack.cli(['run', '--detach', '--', 'true'], carol);
  assert.equal(second.stderr, '', 'said once to a submitter, not on each job');
  const ps = await stack.cli(['ps']);
  assert.match(ps.stdout, new RegExp(`${id}\\s+running\\s+\\S+\\s+carol@ws2/s7\\s+\\S+\\s+5s\\s`));
  // Enforced as --max-runtime is: killed past it, exit 204.
  assert.equal((await stack.cli(['wait', id])).code, 204);
  assert.equal((await stack.job(id)).reason, 'max_runtime exceeded');
  const over = await stack.cli(['run', '--max-runtime', '2h', '--', 'true']);
  assert.equal(over.code, 2);
  assert.equal(
    over.stderr,
    "rc: bad_request: --max-runtime 2h is over this fleet's maximum of 1h; ask for at most that, and checkpoint longer work to run it in parts\n",
  );
  // Holds end by their TTL: no default applies to them, and a TTL is not bounded by it.
  const api = await stack.api('POST', '/api/jobs', { kind: 'hold', ttlS: 7200, submitter: 'tester', wait: false });
  assert.equal(api.status, 201, JSON.stringify(api.body));
  const hold = (api.body as { job: { id: string; maxRuntimeS: number | null } }).job;
  assert.equal(hold.maxRuntimeS, null);
  await stack.cli(['release', hold.id]);
});
