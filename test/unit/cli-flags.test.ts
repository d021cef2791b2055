import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFlags, type FlagSpec } from '../../cli/flags';
import { CliExit } from '../../cli/output';

const specs: FlagSpec[] = [
  { name: 'select', short: 's', type: 'string' },
  { name: 'no-wait', type: 'boolean' },
];

test('flags stop at -- and the command is kept exactly', () => {
  const p = parseFlags('run', ['--select', 'vram>=40G', '--no-wait', '--', 'sh', '-c', 'echo "$x"', '', '--select'], specs, true);
  assert.equal(p.flags.get('select'), 'vram>=40G');
  assert.equal(p.flags.get('no-wait'), true);
  assert.deepEqual(p.rest, ['sh', '-c', 'echo "$x"', '', '--select']);
});

test('the first positional starts the command when asked', () => {
  const p = parseFlags('run', ['-s', 'a=1', 'ls', '-la'], specs, true);
  assert.deepEqual(p.rest, ['ls', '-la']);
  assert.equal(p.flags.get('select'), 'a=1');
  assert.equal(parseFlags('run', ['--select=a=1', 'x'], specs, true).flags.get('select'), 'a=1');
});

test('unknown flags, missing values and values on booleans are usage errors (exit 2)', () => {
  for (const args of [['--bogus'], ['--select'], ['--no-wait=1'], ['-x']]) {
    assert.throws(
      () => parseFlags('run', args, specs, true),
      (e: unknown) => e instanceof CliExit && e.exitCode === 2 && /^rc: usage: /.test(e.message),
      args.join(' '),
    );
  }
});
