// Fair share for the queue's readers (the scheduling pass, GET /api/queue, rc
// ps): the tokens' ranks (core/fair-share.ts over server/jobs/sql/token-use.ts),
// or null while they all stand equal and the queue's own order holds (one
// token queued, or no use at all: today's index-ordered head). Standings move
// slowly (a half-life of days), so a controller reads them again at most every
// FRESH_MS and every pass between uses that read: it weighs every running lease,
// and a deep queue draining runs many passes a second. What it keeps is read
// from the database, whole, at most FRESH_MS ago: two controllers order alike
// but for that second. A token first seen since the read goes after the ranked
// ones until the next read (core unrankedRank).
// Ended leases are charged into token_use in the background (charge-use.ts),
// so a read weighs the running leases and the few ended since, not the history.
import { anyApart, DEFAULT_HALF_LIFE_S, fairRanks } from '../../core/fair-share';
import type { Sql } from '../db';
import { CHARGE_BATCH, chargeUse } from './sql/charge-use';
import type { FairRanks } from './sql/queue-order';
import { severalTokensQueued } from './sql/several-tokens-queued';
import { tokenUse } from './sql/token-use';

/** How long a read of the standings is used (ms). */
export const FRESH_MS = 1000;
/** Ended leases waiting to be charged past which a read starts a charge (the reads weigh each of them until then). */
const CHARGE_AFTER = 500;
/** The controller charges this often whatever the reads (ms): with one token queued nothing reads, and leases still end. */
export const FAIR_SHARE_CHARGE_MS = 60_000;

export class FairShare {
  private charging: Promise<void> | null = null;
  private read: { at: number; ranks: FairRanks | null } | null = null;
  private loading: Promise<FairRanks | null> | null = null;

  constructor(
    private readonly sql: Sql,
    readonly halfLifeS: number = DEFAULT_HALF_LIFE_S,
    private readonly onError: (err: unknown) => void = () => {},
    private readonly freshMs: number = FRESH_MS,
  ) {}

  /** The ranks of the tokens, or null when every queued job's token stands equal (the queue's own order). */
  async ranks(): Promise<FairRanks | null> {
    // One token queued: nothing to order by, whatever the standings (two probes of an index, every time).
    if (!(await severalTokensQueued(this.sql))) return null;
    if (this.read && Date.now() - this.read.at < this.freshMs) return this.read.ranks;
    if (!this.loading) {
      const at = Date.now();
      this.loading = this.load()
        .then((ranks) => {
          this.read = { at, ranks };
          return ranks;
        })
        .finally(() => {
          this.loading = null;
        });
    }
    return this.loading;
  }

  private async load(): Promise<FairRanks | null> {
    const rows = await tokenUse(this.sql, this.halfLifeS);
    if (rows.reduce((n, r) => n + r.uncharged, 0) >= CHARGE_AFTER) void this.charge();
    const ranks = fairRanks(rows, new Map(rows.map((r) => [r.team, r.share])));
    return anyApart(ranks) ? ranks : null;
  }

  /** Charges the ended leases in the background, one charge at a time here (another controller's may run beside it). */
  charge(): Promise<void> {
    if (this.charging) return this.charging;
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

  /** Waits for a read and a charge under way (a controller stopping). */
  async stop(): Promise<void> {
    await Promise.allSettled([this.loading, this.charging]);
  }
}
