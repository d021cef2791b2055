// What changed in the configured provider accounts (core/account-changes.ts):
// each difference named, a credential only by its fingerprint.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AccountRecord, accountChanges } from '../../core/account-changes';

const pod: AccountRecord = { account: 'runpod/lab', provider: 'runpod', prefix: 'rc', image: 'img:1', credential: 'sha256:aaaaaaaaaaaa' };
const local: AccountRecord = { account: 'local', provider: 'local', prefix: 'rclocal', image: 'rc-job:stock', credential: null };

test('nothing changed: nothing to audit', () => {
  assert.deepEqual(accountChanges([pod, local], [local, pod]), []);
  assert.deepEqual(accountChanges([], []), []);
});

test('added, changed and removed accounts, each change named', () => {
  assert.deepEqual(accountChanges([], [pod]), [{ action: 'provider_account.add', account: 'runpod/lab', detail: { ...pod } }]);
  assert.deepEqual(accountChanges([pod, local], [{ ...pod, prefix: 'rc2', credential: 'sha256:bbbbbbbbbbbb' }]), [
    {
      action: 'provider_account.change',
      account: 'runpod/lab',
      detail: {
        provider: 'runpod',
        prefix: { from: 'rc', to: 'rc2' },
        credential: { what: 'rotated', from: 'sha256:aaaaaaaaaaaa', to: 'sha256:bbbbbbbbbbbb' },
      },
    },
    { action: 'provider_account.remove', account: 'local', detail: { provider: 'local', prefix: 'rclocal' } },
  ]);
  assert.deepEqual(accountChanges([local], [{ ...local, image: 'rc-worker:2' }])[0]?.detail, {
    provider: 'local',
    image: { from: 'rc-job:stock', to: 'rc-worker:2' },
  });
});
