// What changed in the provider accounts the controller's settings configure,
// since the database last recorded them (server/providers/accounts.ts writes
// the record and the audit rows). Never a credential: only its fingerprint.

/** A configured account as the database records it. */
export interface AccountRecord {
  /** `local`, `runpod/lab-b`. */
  account: string;
  provider: string;
  /** Its instances' names start `<prefix>-`. */
  prefix: string;
  /** The image its machines run. */
  image: string;
  /** A fingerprint of its credential (server/providers/configured.ts); null for an account without one. */
  credential: string | null;
}

export type AccountChange =
  | { action: 'provider_account.add'; account: string; detail: Record<string, unknown> }
  | { action: 'provider_account.change'; account: string; detail: Record<string, unknown> }
  | { action: 'provider_account.remove'; account: string; detail: Record<string, unknown> };

/** The audit rows for going from `recorded` to `configured`, by account name; none when nothing changed. */
export function accountChanges(recorded: readonly AccountRecord[], configured: readonly AccountRecord[]): AccountChange[] {
  const before = new Map(recorded.map((r) => [r.account, r]));
  const now = new Map(configured.map((r) => [r.account, r]));
  const changes: AccountChange[] = [];
  for (const c of configured) {
    const r = before.get(c.account);
    if (!r) {
      changes.push({ action: 'provider_account.add', account: c.account, detail: { ...c } });
      continue;
    }
    const changed: Record<string, unknown> = {};
    if (r.provider !== c.provider) changed.provider = { from: r.provider, to: c.provider };
    if (r.prefix !== c.prefix) changed.prefix = { from: r.prefix, to: c.prefix };
    if (r.image !== c.image) changed.image = { from: r.image, to: c.image };
    if (r.credential !== c.credential)
      changed.credential = {
        // What happened to it, in words, and the fingerprints: which key, never the key.
        what: r.credential === null ? 'set' : c.credential === null ? 'cleared' : 'rotated',
        from: r.credential,
        to: c.credential,
      };
    if (Object.keys(changed).length) changes.push({ action: 'provider_account.change', account: c.account, detail: { provider: c.provider, ...changed } });
  }
  for (const r of recorded)
    if (!now.has(r.account)) changes.push({ action: 'provider_account.remove', account: r.account, detail: { provider: r.provider, prefix: r.prefix } });
  return changes;
}
