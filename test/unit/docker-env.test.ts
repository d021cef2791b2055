import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StartJob } from '../../protocol/worker';
import { clientEnv, clientReads, dockerEnv } from '../../worker/docker-env';

const order = (env: Record<string, string>): StartJob => ({
  jobId: 'j1',
  kind: 'run',
  fence: 1,
  argv: ['true'],
  env,
  cwd: null,
  devices: [{ index: 0, name: 'h:gpu0', uuid: null }],
  maxRuntimeS: null,
  idleTimeoutS: null,
});

test('--env values go in the docker client environment behind -e KEY; rc’s own variables stay -e KEY=VALUE', () => {
  const d = dockerEnv(order({ HF_TOKEN: 'secret-1', MULTI: 'a\nb', EMPTY: '' }));
  assert.deepEqual(d.env, { HF_TOKEN: 'secret-1', MULTI: 'a\nb', EMPTY: '' });
  for (const v of ['secret-1', 'a\nb']) assert.ok(!d.args.some((a) => a.includes(v)), `${JSON.stringify(v)} in ${d.args.join(' ')}`);
  assert.deepEqual(
    d.args.filter((a, i) => d.args[i - 1] === '-e' && !a.includes('=')),
    ['HF_TOKEN', 'MULTI', 'EMPTY'],
  );
  assert.ok(d.args.includes('RC_JOB_ID=j1'));
  assert.ok(d.args.includes('CUDA_VISIBLE_DEVICES=0'));
  assert.equal(d.args.length % 2, 0);
  assert.ok(d.args.every((a, i) => i % 2 === 1 || a === '-e'));
});

test('a name the docker client reads itself never reaches its environment: it goes on the command line', () => {
  for (const k of [
    'PATH',
    'HOME',
    'LD_PRELOAD',
    'LD_LIBRARY_PATH',
    'DOCKER_HOST',
    'DOCKER_CONFIG',
    'GODEBUG',
    'http_proxy',
    'HTTPS_PROXY',
    'XDG_CONFIG_HOME',
    'OTEL_EXPORTER_OTLP_ENDPOINT',
  ]) {
    assert.ok(clientReads(k), k);
    const d = dockerEnv(order({ [k]: '/x' }));
    assert.deepEqual(d.env, {});
    assert.ok(d.args.includes(`${k}=/x`), k);
  }
  for (const k of ['HF_TOKEN', 'GOOGLE_API_KEY', 'WANDB_API_KEY', 'AWS_SECRET_ACCESS_KEY', 'PATHX', 'MY_HOME']) assert.ok(!clientReads(k), k);
  const env = clientEnv(dockerEnv(order({ A: '1' })), { PATH: '/usr/bin', A: 'worker', B: undefined } as unknown as NodeJS.ProcessEnv);
  assert.deepEqual(env, { PATH: '/usr/bin', A: '1' });
});
