// What the CLI decides without a controller: which help --help asks for,
// a terminal's starting size, the hints only this shell can give, and how
// several --select flags combine.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hintFor } from '../../cli/client';
import { parseFlags } from '../../cli/flags';
import { HELP, helpOf, wantsHelp } from '../../cli/help';
import { PLACEMENT_FLAGS, selectorOf } from '../../cli/placement';
import { terminalSize } from '../../cli/tty';
import { hours, share, summary } from '../../cli/commands/usage';

test('--help anywhere among the flags asks for that command’s help; after -- (or rc run’s command) it is the command’s own', async () => {
  assert.equal(await wantsHelp('admin', ['token', 'create', '--help']), 'admin token create');
  assert.equal(await wantsHelp('admin', ['token', 'create', 'x', '--admin', '-h']), 'admin token create x');
  assert.equal(await wantsHelp('hold', ['extend', '--help']), 'hold extend');
  assert.equal(await wantsHelp('ps', ['--json', '--help']), 'ps');
  assert.equal(await wantsHelp('run', ['-s', 'x', '--', 'python', '--help']), null);
  assert.equal(await wantsHelp('run', ['python', '--help']), null);
  assert.equal(await wantsHelp('run', ['--gpu', 'H100', '--help']), 'run');
  assert.equal(await wantsHelp('kill', ['j0000000001']), null);
});

test('every command and admin subcommand has help; an admin subcommand gets its own lines', async () => {
  for (const name of ['run', 'hold', 'release', 'cp', 'devices', 'describe', 'kill', 'ps', 'jobs', 'logs', 'attach', 'wait', 'usage', 'admin']) {
    assert.match(await helpOf(name), new RegExp(`usage: rc ${name}\\b`), name);
    assert.match(HELP, new RegExp(`^ {2}${name}\\s`, 'm'), `rc --help lists ${name}`);
  }
  const create = await helpOf('admin token create');
  assert.match(create, /^usage: rc admin token create\n/);
  assert.match(create, /--submitter <name or prefix\/>/);
  assert.doesNotMatch(create, /host add/);
  const note = await helpOf('admin note set gpubox:gpu0');
  assert.match(note, /^usage: rc admin note set\n/);
  assert.match(await helpOf('admin host'), /host add[\s\S]*host off[\s\S]*host rm/);
  assert.match(await helpOf('admin nonsense'), /^usage: rc admin <command>/);
  assert.match(await helpOf('hold extend'), /rc hold extend <hold-id> --ttl <dur>/);
  assert.match(await helpOf('run'), /--detach/);
});

test('a terminal that reports no size (0×0) starts at 80×24', () => {
  assert.deepEqual(terminalSize(0, 0), { cols: 80, rows: 24 });
  assert.deepEqual(terminalSize(undefined, undefined), { cols: 80, rows: 24 });
  assert.deepEqual(terminalSize(120, 0), { cols: 80, rows: 24 });
  assert.deepEqual(terminalSize(120, 40), { cols: 120, rows: 40 });
  assert.deepEqual(terminalSize(5000, 40), { cols: 80, rows: 24 });
});

test('not_job_owner from another shell of the same user@host says how to act as that submitter; forbidden in a checkout says RC_ADMIN=1', () => {
  const me = { submitter: 'alice@ws1/s200' };
  assert.equal(
    hintFor('not_job_owner', 'job j0000000001 belongs to alice@ws1/s100, not alice@ws1/s200; leave it alone', me),
    ". You submitted it from another shell: act as that submitter with RC_SUBMITTER='alice@ws1/s100' rc kill j0000000001",
  );
  assert.match(hintFor('not_job_owner', 'hold j0000000001 belongs to alice@ws1/s100, not alice@ws1/s200; leave it alone', me), /rc release j0000000001$/);
  // Someone else's, or a name that is not the default user@host/session: no hint.
  assert.equal(hintFor('not_job_owner', 'job j0000000001 belongs to bob@ws1/s100, not alice@ws1/s200; leave it alone', me), '');
  assert.equal(hintFor('not_job_owner', 'job j0000000001 belongs to alice@ws1/s100, not agent-7; leave it alone', { submitter: 'agent-7' }), '');
  assert.match(hintFor('forbidden', 'this needs an admin token', { submitter: 'x', checkoutClient: true }), /RC_ADMIN=1/);
  assert.equal(hintFor('forbidden', 'this needs an admin token', { submitter: 'x' }), '');
});

test('a second --select is ANDed with the first, never a replacement', () => {
  const parsed = parseFlags('run', ['-s', 'vram>=40G', '--select', 'vendor=nvidia', '-s', '', '--', 'true'], PLACEMENT_FLAGS, true);
  assert.equal(selectorOf(parsed), 'vram>=40G,vendor=nvidia');
  assert.equal(selectorOf(parseFlags('run', ['--', 'true'], PLACEMENT_FLAGS, true)), '');
});

test('rc usage writes device time in hours, minutes or seconds, and the idle share of the time with a GPU signal', () => {
  assert.equal(hours(0), '0');
  assert.equal(hours(7.4), '7s');
  assert.equal(hours(2400), '40m');
  assert.equal(hours(45_000), '12.5h');
  assert.equal(share({ leasedS: 100, idleS: 25, noSignalS: 0 }), '25%');
  // CPU-slot time (no signal) is not in the denominator: of the 50 s with a signal, 25 were idle.
  assert.equal(share({ leasedS: 100, idleS: 25, noSignalS: 50 }), '50%');
  assert.equal(share({ leasedS: 100, idleS: 0, noSignalS: 100 }), '-');
});

test('rc usage names CPU slots only on a fleet that used some; GPUs without a signal are said as such', () => {
  const row = { key: 'TOTAL', leasedS: 100, jobsS: 100, terminalsS: 0, holdsS: 0, idleS: 25, noSignalS: 0, cpuSlotS: 0 };
  assert.equal(summary(row), '25% of the leased GPU time was idle');
  // A GPU fleet where a short job ended before its first sample: no CPU slot to speak of.
  const gpuOnly = summary({ ...row, noSignalS: 20 });
  assert.doesNotMatch(gpuOnly, /CPU slot/);
  assert.equal(gpuOnly, '31% of the leased GPU time was idle; 20s on GPUs that sent no signal, counted neither idle nor busy');
  assert.equal(summary({ ...row, noSignalS: 50, cpuSlotS: 50 }), '50% of the leased GPU time was idle; 50s on CPU slots, with no GPU signal');
  assert.equal(summary({ ...row, idleS: 0, noSignalS: 100, cpuSlotS: 100 }), 'no GPU time with a signal in this window; 2m on CPU slots, with no GPU signal');
});
