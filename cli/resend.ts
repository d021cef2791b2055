// A submit that may or may not have happened is sent again, with the same
// idempotency key, until it is answered: the controller gives back the job
// the first one stored (never a second job), or stores it now. Without this a
// database stall during a submit left a job running with nobody following it.
import { CliExit, err } from './output';

/** How long rc keeps sending a submit again before it gives up (RC_SUBMIT_RETRY, seconds). */
export function resendBudgetMs(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const given = env.RC_SUBMIT_RETRY;
  const s = given === undefined || given === '' ? Number.NaN : Number(given);
  return Number.isFinite(s) && s >= 0 ? s * 1000 : 120_000;
}

/**
 * An idempotency key for one invocation. Unique per token is all it needs (the
 * controller scopes keys by token), not secret: Math.random (seeded per
 * process from the OS) with the time, and no crypto module loaded at start-up.
 */
export function idempotencyKey(): string {
  let s = `rc-${Date.now().toString(36)}-`;
  for (let i = 0; i < 20; i++) s += 'abcdefghijklmnopqrstuvwxyz0123456789'[(Math.random() * 36) | 0];
  return s;
}

/** Runs `send` (a request carrying an idempotency key) until it is answered, while its errors say it may be sent again. */
export async function resending<T>(send: () => Promise<T>, budgetMs = resendBudgetMs()): Promise<T> {
  const until = Date.now() + budgetMs;
  let delayMs = 250;
  let told = false;
  for (;;) {
    try {
      return await send();
    } catch (e) {
      if (!(e instanceof CliExit) || !e.mayResend || Date.now() + delayMs > until) throw e;
      if (!told) {
        err(
          `rc: the submit got no answer (${e.code}); sending it again until ${new Date(until).toISOString().slice(11, 19)} UTC: the same request, so it runs once\n`,
        );
        told = true;
      }
      await new Promise((r) => setTimeout(r, delayMs));
      delayMs = Math.min(delayMs * 2, 5000);
    }
  }
}
