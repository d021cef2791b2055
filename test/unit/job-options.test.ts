import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envOf } from '../../cli/commands/run';
import { parseFlags } from '../../cli/flags';
import { CliExit } from '../../cli/output';
import { ENV_MAX_BYTES, envProblem, jobNameProblem } from '../../core/job-options';

const parse = (args: string[]) => parseFlags('run', args, [{ name: 'env', type: 'string', repeat: true }], true);

test('--env is repeatable: KEY=VALUE, KEY from the caller, the last one for a key wins, = kept in values', () => {
  const p = parse(['--env', 'A=1', '--env=B=x=y', '--env', 'C', '--env', 'A=3', '--', 'cmd']);
  assert.deepEqual(p.lists.get('env'), ['A=1', 'B=x=y', 'C', 'A=3']);
  assert.deepEqual(envOf(p, { C: 'from caller' }), { A: '3', B: 'x=y', C: 'from caller' });
  assert.equal(envOf(parse([]), {}), null);
});

test('--env KEY unset in the caller, a bad key and a reserved key stop rc with exit 2', () => {
  const fails = (args: string[], re: RegExp) =>
    assert.throws(
      () => envOf(parse(args), {}),
      (e: unknown) => e instanceof CliExit && e.exitCode === 2 && re.test(e.message),
    );
  fails(['--env', 'UNSET'], /^rc: usage: --env UNSET: UNSET is not set in your environment/);
  fails(['--env', '9X=1'], /^rc: bad_env: /);
  fails(['--env', 'RC_DEVICES=1'], /^rc: reserved_env: /);
});

test('the rules: names, keys, counts and sizes', () => {
  assert.equal(jobNameProblem('train-bert.v2_1'), null);
  for (const bad of ['', '_x', 'a b', 'a/b', 'x'.repeat(64), 'j0000000000', 'é']) assert.ok(jobNameProblem(bad), bad);
  assert.equal(jobNameProblem('j000000000'), null, 'one digit short of an id is a name');
  assert.equal(envProblem({ _A1: 'v', HF_TOKEN: '' }), null);
  assert.equal(envProblem({ CUDA_DEVICE_ORDER: 'x' })?.code, 'reserved_env');
  // Which attempt a process belongs to: a worker's clean-up after its restart goes by it.
  assert.equal(envProblem({ RC_FENCE: '7' })?.code, 'reserved_env');
  assert.equal(envProblem({ __proto__: 'x' } as unknown as Record<string, string>), null, 'an object literal __proto__ is no key');
  assert.equal(envProblem(JSON.parse('{"__proto__": "x"}') as Record<string, string>)?.code, 'bad_env');
  assert.equal(envProblem({ A: 'a\0b' })?.code, 'bad_env');
  assert.equal(envProblem({ A: 'x'.repeat(ENV_MAX_BYTES - 3) }), null, 'exactly the bound');
  assert.equal(envProblem({ A: 'x'.repeat(ENV_MAX_BYTES - 2) })?.code, 'bad_env');
});
