// Which offer a job's machine is launched from (seed 002, "How rrun picks"):
// the cheapest that fits. Spot offers compete only when the job allows spot;
// --max-price caps the price; an offer whose launch failed lately is skipped
// (FailedOffers) so the next one is tried instead of the same failure again.

/** What the pick reads of an offer (server/providers/provider.ts Offer has it all). */
export interface PricedOffer {
  account: string;
  offerId: string;
  spot: boolean;
  pricePerHour: number;
}

export interface PriceWants {
  /** --spot: spot and on-demand offers compete on price; otherwise on-demand only. */
  spot: boolean;
  /** --max-price in $/h; null or absent: any price. */
  maxPricePerHour?: number | null;
}

/** How long an offer whose launch failed is left out (issue 34: 10 minutes). */
export const FAILED_OFFER_SKIP_MS = 10 * 60 * 1000;

/** The offers a job may take, cheapest first (ties: by account, then offer id, so every controller orders them alike). */
export function cheapestFirst<T extends PricedOffer>(offers: readonly T[], wants: PriceWants, skipped: (o: PricedOffer) => boolean = () => false): T[] {
  const max = wants.maxPricePerHour ?? Number.POSITIVE_INFINITY;
  return offers
    .filter((o) => (wants.spot || !o.spot) && o.pricePerHour <= max && !skipped(o))
    .sort((a, b) => a.pricePerHour - b.pricePerHour || a.account.localeCompare(b.account) || a.offerId.localeCompare(b.offerId));
}

/** Offers whose launch failed, each left out until FAILED_OFFER_SKIP_MS after its failure (per controller, in memory). */
export class FailedOffers {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly skipMs = FAILED_OFFER_SKIP_MS,
    private readonly now: () => number = Date.now,
  ) {}

  failed(o: PricedOffer): void {
    this.until.set(keyOf(o), this.now() + this.skipMs);
  }

  readonly skipped = (o: PricedOffer): boolean => {
    const t = this.until.get(keyOf(o));
    if (t === undefined) return false;
    if (t > this.now()) return true;
    this.until.delete(keyOf(o));
    return false;
  };
}

function keyOf(o: PricedOffer): string {
  return `${o.account}\u0000${o.offerId}`;
}
