// The sweeper: every RC_SWEEP_S, each provider account's instances that carry
// its prefix and that no live machine row owns are deleted, each audited. A
// machine is recorded before its launch, so an instance nobody owns is one the
// controller lost (a launch whose row was terminated, a crash): nothing without
// the prefix is ever listed, so nothing else is ever touched. One controller
// sweeps at a time: the pass holds a transaction-scoped advisory lock.
import type { Provider } from '../providers/provider';
import type { Sql } from '../db';

/** The advisory lock's key (an arbitrary constant: "rc sweep"). */
const SWEEP_LOCK = 0x72637377;

export interface SweepResult {
  /** False: another controller was sweeping; this pass did nothing. */
  swept: boolean;
  deleted: string[];
}

export async function sweep(sql: Sql, providers: Iterable<Provider>, log: (msg: string) => void): Promise<SweepResult> {
  return sql.begin(async (tx) => {
    const [lock] = await tx<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(${SWEEP_LOCK}) as ok`;
    if (!lock?.ok) return { swept: false, deleted: [] };
    const deleted: string[] = [];
    for (const provider of providers) {
      let names: string[];
      try {
        names = (await provider.list(`${provider.prefix}-`)).filter((n) => n.startsWith(`${provider.prefix}-`));
      } catch (err) {
        log(`sweeper: listing ${provider.account}'s instances failed: ${(err as Error).message}`);
        continue;
      }
      if (!names.length) continue;
      const owned = await tx<{ name: string }[]>`
        select instance_name as name from machines where account = ${provider.account} and state <> 'terminated' and instance_name in ${tx(names)}`;
      const keep = new Set(owned.map((o) => o.name));
      for (const name of names.filter((n) => !keep.has(n))) {
        try {
          await provider.terminate(name);
        } catch (err) {
          log(`sweeper: deleting ${name} failed: ${(err as Error).message}`);
          continue;
        }
        deleted.push(name);
        await tx`insert into audit (actor, action, target, detail)
          values ('controller', 'machine.sweep', ${name}, ${JSON.stringify({ account: provider.account, why: 'sweeper: no machine owns it' })}::text::jsonb)`;
        log(`sweeper: deleted ${provider.account}'s instance ${name}: no machine owns it`);
      }
    }
    return { swept: true, deleted };
  });
}
