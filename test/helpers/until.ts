/** Resolves with the first value `check` gives that is not undefined, polling every 10 ms; rejects after `ms` saying what it waited for. */
export function until<T>(check: () => T | undefined, what: string, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = () => {
      const v = check();
      if (v !== undefined) return resolve(v);
      if (Date.now() > end) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 10);
    };
    tick();
  });
}

/** Resolves with the first value the async `check` gives that is not undefined, polling every 100 ms; rejects after `ms` saying what it waited for. */
export async function untilAsync<T>(check: () => Promise<T | undefined>, what: string, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
