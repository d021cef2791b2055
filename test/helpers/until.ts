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
