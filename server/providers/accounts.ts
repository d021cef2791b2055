// At start-up: the provider accounts the settings configure, compared with what
// the database recorded at the last start (provider_accounts). An account added,
// changed (its prefix, its image, its credential rotated) or removed is written
// to the audit log, actor `settings`, and the record is brought up to date.
// Controllers starting at once take turns on an advisory lock: the first writes
// the change, the next finds nothing left to write.
import { type AccountChange, type AccountRecord, accountChanges } from '../../core/account-changes';
import type { Sql } from '../db';

/** The advisory lock's key (an arbitrary constant: "rc accounts"). */
const ACCOUNTS_LOCK = 0x72636163;

export async function recordProviderAccounts(sql: Sql, configured: readonly AccountRecord[]): Promise<AccountChange[]> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${ACCOUNTS_LOCK})`;
    const recorded = await tx<AccountRecord[]>`select account, provider, prefix, image, credential from provider_accounts`;
    const changes = accountChanges(recorded, configured);
    for (const c of changes) {
      if (c.action === 'provider_account.remove') await tx`delete from provider_accounts where account = ${c.account}`;
      else {
        const a = configured.find((x) => x.account === c.account)!;
        await tx`insert into provider_accounts (account, provider, prefix, image, credential)
          values (${a.account}, ${a.provider}, ${a.prefix}, ${a.image}, ${a.credential})
          on conflict (account) do update set provider = excluded.provider, prefix = excluded.prefix, image = excluded.image,
            credential = excluded.credential, recorded_at = now()`;
      }
      await tx`insert into audit (actor, action, target, detail)
        values ('settings', ${c.action}, ${c.account}, ${JSON.stringify(c.detail)}::text::jsonb)`;
    }
    return changes;
  });
}
