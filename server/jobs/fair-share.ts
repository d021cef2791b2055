// Fair share for the queue's readers (the scheduling pass, GET /api/queue, rc
// ps): the tokens' ranks now (core/fair-share.ts over server/jobs/sql/token-use.ts),
// or null while they all stand equal and the queue's own order holds (one
// token queued, or no use at all: today's index-ordered head, not one query more
// than two probes). Nothing is kept between reads but when this controller last
// charged: every controller reads the same rows, so every one orders alike.
// Ended leases are charged into token_use in the background (charge-use.ts),
// so a read weighs the running leases and the few ended since, not the history.
import { anyApart, DEFAULT_HALF_LIFE_S, fairRanks } from '../../core/fair-share';
import type { Sql } from '../db';
import { CHARGE_BATCH, chargeUse } from './sql/charge-use';
import type { FairRanks } from './sql/queue-order';
import { severalTokensQueued } from './sql/several-tokens-queued';
import { tokenUse } from './sql/token-use';

/** Ended leases waiting to be charged past which a read starts a charge (the reads weigh each of them until then). */
const CHARGE_AFTER = 500;
/** A read charges when ended leases waited this long since the last charge here (ms). */
const CHARGE_EVERY_MS = 60_000;
/** The controller charges this often whatever the reads (ms): with one token queued nothing reads, and leases still end. */
export const FAIR_SHARE_CHARGE_MS = 60_000;

export class FairShare {
  private charging: Promise<void> | null = null;
  private chargedAt = 0;

  constructor(
    private readonly sql: Sql,
    readonly halfLifeS: number = DEFAULT_HALF_LIFE_S,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** The ranks of the tokens, or null when every queued job's token stands equal (the queue's own order). */
  async ranks(): Promise<FairRanks | null> {
    if (!(await severalTokensQueued(this.sql))) return null;
    const rows = await tokenUse(this.sql, this.halfLifeS);
    const uncharged = rows.reduce((n, r) => n + r.uncharged, 0);
    if (uncharged >= CHARGE_AFTER || (uncharged > 0 && Date.now() - this.chargedAt >= CHARGE_EVERY_MS)) void this.charge();
    const ranks = fairRanks(rows, new Map(rows.map((r) => [r.team, r.share])));
    return anyApart(ranks) ? ranks : null;
  }

  /** Charges the ended leases in the background, one charge at a time here (another controller's may run beside it). */
  charge(): Promise<void> {
    if (this.charging) return this.charging;
    this.chargedAt = Date.now();
    this.charging = (async () => {
      try {
        while ((await chargeUse(this.sql, this.halfLifeS)) === CHARGE_BATCH) {}
      } catch (err) {
        this.onError(err);
      } finally {
        this.charging = null;
      }
    })();
    return this.charging;
  }

  /** Waits for a charge under way (a controller stopping). */
  async stop(): Promise<void> {
    await this.charging;
  }
}
