// The record of provider accounts (server/providers/accounts.ts) on real
// Postgres: controllers starting at once with the same new settings write
// each change to the audit log once, whichever of them gets there first.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AccountRecord } from '../../core/account-changes';
import { connect, type Database } from '../../server/db';
import { recordProviderAccounts } from '../../server/providers/accounts';
import { credentialFingerprint } from '../../server/providers/configured';
import { freshDatabase } from '../helpers/db';

let db: Database;
let url: string;
let drop: () => Promise<void>;

before(async () => {
  const fresh = await freshDatabase();
  db = fresh.database;
  url = fresh.url;
  drop = fresh.drop;
});
after(async () => drop());

const account = (key: string): AccountRecord => ({
  account: 'runpod/lab',
  provider: 'runpod',
  prefix: 'rclab',
  image: 'ghcr.io/lab/pod:1',
  credential: credentialFingerprint(key),
});

test('three controllers starting at once with new settings: each change is audited once', async () => {
  // Each controller with a connection of its own, as separate processes would be.
  const controllers = [connect(url, 1), connect(url, 1), connect(url, 1)];
  try {
    for (let round = 0; round < 15; round++) {
      const configured = [account(`rpa_key_number_${round}`)];
      const written = await Promise.all(controllers.map((c) => recordProviderAccounts(c.client, configured)));
      assert.equal(written.flat().length, 1, `round ${round}: one controller wrote the change, ${JSON.stringify(written)}`);
      assert.equal(written.flat()[0]!.action, round === 0 ? 'provider_account.add' : 'provider_account.change');
    }
    const [n] = await db.client<{ n: number }[]>`select count(*)::int as n from audit where action like 'provider_account.%'`;
    assert.equal(n!.n, 15);
    const rows = await db.client`select account, credential from provider_accounts`;
    assert.deepEqual([...rows], [{ account: 'runpod/lab', credential: credentialFingerprint('rpa_key_number_14') }]);
    // And with nothing configured, the account's removal, once.
    const removed = await Promise.all(controllers.map((c) => recordProviderAccounts(c.client, [])));
    assert.deepEqual(
      removed.flat().map((c) => [c.action, c.account]),
      [['provider_account.remove', 'runpod/lab']],
    );
  } finally {
    await Promise.all(controllers.map((c) => c.close()));
  }
});
