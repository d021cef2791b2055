// GET /api/offers (rc offers): the cheapest offers that fit, across the
// configured provider accounts. Every account is asked at once; one that fails
// to answer is a warning, never a failure of the whole call (seed 002, "Asking
// for a machine").
import { parseGpuChoices, type GpuChoice } from '../../core/gpu-choices';
import { cloudNames, fitsGpus } from '../../core/machine-fit';
import { RcError } from '../../core/errors';
import type { OffersView } from '../../protocol/wire';
import type { Offer, OfferQuery, Provider } from '../providers/provider';

export const DEFAULT_OFFERS_LIMIT = 20;
export const MAX_OFFERS_LIMIT = 200;

export interface OffersFilter {
  query: OfferQuery;
  /** --gpu's choices: an offer fits one of them (its model or family, at least that many); none: any shape. */
  gpus: GpuChoice[];
  /** `local`, `runpod` (every account of it) or `runpod/lab-b` (that one); null: all. */
  cloud: string | null;
  limit: number;
}

const KEYS = new Set(['gpu', 'cpus', 'ram', 'disk', 'spot', 'cloud', 'max-price', 'cuda', 'limit']);

function bad(message: string): never {
  throw new RcError('bad_request', message);
}

function number(query: URLSearchParams, key: string, what: string, min: number, max: number, whole: boolean): number | undefined {
  const text = query.get(key);
  if (text === null) return undefined;
  const n = /^\d+(\.\d+)?$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isFinite(n) || n < min || n > max || (whole && !Number.isInteger(n)))
    bad(`${key}: ${whole ? 'a whole number' : 'a number'} of ${what} from ${min} to ${max}, not ${JSON.stringify(text.slice(0, 30))}`);
  return n;
}

/** The query's parameters, each checked; an unknown one is refused (a misspelt filter would silently show everything). */
export function parseOffersQuery(query: URLSearchParams): OffersFilter {
  for (const key of query.keys()) if (!KEYS.has(key)) bad(`${JSON.stringify(key.slice(0, 30))} is not a filter of offers; they are ${[...KEYS].join(', ')}`);
  const gpuText = query.get('gpu');
  let gpus: GpuChoice[] = [];
  if (gpuText !== null) {
    const parsed = parseGpuChoices(gpuText);
    if (!parsed.ok) bad(`gpu: ${parsed.message}`);
    gpus = parsed.choices;
  }
  const spot = query.get('spot');
  if (spot !== null && spot !== '1' && spot !== '0')
    bad(`spot: 1 (spot and on-demand offers compete) or 0 (on-demand only), not ${JSON.stringify(spot.slice(0, 20))}`);
  const cloud = query.get('cloud');
  if (cloud !== null && !/^[a-z0-9][a-z0-9-]{0,39}(\/[A-Za-z0-9][A-Za-z0-9_.-]{0,63})?$/.test(cloud))
    bad(`cloud: a provider (local, runpod) or a provider/account (runpod/lab-b), not ${JSON.stringify(cloud.slice(0, 50))}`);
  const cuda = query.get('cuda');
  if (cuda !== null && !/^\d{1,2}\.\d{1,2}$/.test(cuda)) bad(`cuda: a CUDA version such as 12.4, not ${JSON.stringify(cuda.slice(0, 20))}`);
  return {
    gpus,
    cloud,
    limit: number(query, 'limit', 'offers', 1, MAX_OFFERS_LIMIT, true) ?? DEFAULT_OFFERS_LIMIT,
    query: {
      minCpus: number(query, 'cpus', 'CPUs', 1, 1024, true),
      minRamGiB: number(query, 'ram', 'GiB of RAM', 1, 65536, true),
      minDiskGiB: number(query, 'disk', 'GiB of disk', 1, 1_000_000, true),
      maxPricePerHour: number(query, 'max-price', 'US dollars an hour', 0.01, 10_000, false),
      minCuda: cuda ?? undefined,
      // Without spot=1 only on-demand offers; with it both compete on price.
      spot: spot === '1' ? undefined : false,
    },
  };
}

/** Why `cloud` (rc offers --cloud, rc run --cloud) names no account here, listing the configured ones; null: it names one, or is null while one is configured. */
export function unknownCloud(providers: readonly Provider[], cloud: string | null): string | null {
  if (providers.some((p) => cloudNames(cloud, p.account))) return null;
  const accounts = providers.length ? `the accounts are ${providers.map((p) => p.account).join(', ')}` : 'none is configured';
  return cloud === null ? `no provider account is configured here (${accounts})` : `no configured account is ${cloud}; ${accounts}`;
}

/** Every account `cloud` names, asked at once; the fitting offers, cheapest first, at most `limit`. */
export async function cheapestOffers(providers: readonly Provider[], f: OffersFilter): Promise<OffersView> {
  const asked = providers.filter((p) => cloudNames(f.cloud, p.account));
  // No --cloud and no account: no offers, not an error.
  const unknown = f.cloud === null ? null : unknownCloud(providers, f.cloud);
  if (unknown) bad(`cloud: ${unknown}`);
  const answers = await Promise.allSettled(asked.map((p) => p.offers(f.query)));
  const offers: Offer[] = [];
  const warnings: string[] = [];
  answers.forEach((a, i) => {
    if (a.status === 'fulfilled') offers.push(...a.value.filter((o) => fitsGpus(o, f.gpus)));
    else warnings.push(`${asked[i]!.account}: no offers, it failed to answer: ${String((a.reason as Error)?.message ?? a.reason).slice(0, 300)}`);
  });
  offers.sort((a, b) => a.pricePerHour - b.pricePerHour || a.account.localeCompare(b.account) || a.offerId.localeCompare(b.offerId));
  return { offers: offers.slice(0, f.limit).map(view), warnings };
}

function view(o: Offer): OffersView['offers'][number] {
  return {
    account: o.account,
    offerId: o.offerId,
    gpuModel: o.gpuModel,
    gpuCount: o.gpuCount,
    vramGiB: o.vramGiB,
    cpus: o.cpus,
    ramGiB: o.ramGiB,
    diskGiB: o.diskGiB,
    cuda: o.cuda,
    region: o.region,
    spot: o.spot,
    pricePerHour: o.pricePerHour,
    simulated: o.simulated,
  };
}
