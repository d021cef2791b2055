// Launching a machine for one job (issue 34, seed 002 "How rrun picks"): the
// offers of the provider accounts it may use are gathered, the cheapest that
// fits is launched (core/cheapest-fit.ts), and a launch that fails moves on to
// the next offer, that one skipped for a while. The database holds the limits:
// one live machine per job, and at most RC_MAX_MACHINES live machines
// (launchMachineFor). Which queued job asks for a machine, and when, is the
// caller's; this decides only the offer.
import { cheapestFirst, type FailedOffers } from '../../core/cheapest-fit';
import { cloudNames, type MachineWants, offerFits, queryOf } from '../../core/machine-fit';
import type { Offer, OfferQuery, Provider } from '../providers/provider';
import { ProviderError } from '../providers/provider';
import { type LaunchRefused, launchMachineFor, type MachineDeps, type MachineRow } from './lifecycle';

export interface PlacementDeps extends MachineDeps {
  /** RC_MAX_MACHINES. */
  maxMachines: number;
  /** Offers whose launch failed lately (per controller, kept across passes). */
  failed: FailedOffers;
}

export type Placed = { placed: 'launched'; machine: MachineRow; offer: Offer } | LaunchRefused | { refused: 'no_offer'; tried: number };

/**
 * Launches one machine for `jobId` from the cheapest offer that fits. An account
 * that does not answer (its credentials refused, or any failure) is left out of
 * this round; a launch that fails marks its offer failed and the next is tried.
 * `offers`: every account's offers, asked once for many jobs (a machine pass: roundOffers);
 * absent, the accounts the job may use are asked now.
 */
export async function placeJob(deps: PlacementDeps, jobId: string, wants: MachineWants, offers?: readonly Offer[]): Promise<Placed> {
  const asked = offers ?? (await roundOffers(deps, wants.cloud, queryOf(wants)));
  let tried = 0;
  for (const offer of cheapestFirst(
    asked.filter((o) => offerFits(o, wants)),
    wants,
    deps.failed.skipped,
  )) {
    tried += 1;
    const got = await launchMachineFor(deps, offer, { jobId, maxMachines: deps.maxMachines });
    if ('refused' in got) return got;
    if (got.state !== 'terminated') return { placed: 'launched', machine: got, offer };
    deps.failed.failed(offer);
  }
  return { refused: 'no_offer', tried };
}

/** The offers of every account `cloud` names (null: all), asked at once; one that does not answer is left out of this round. */
export async function roundOffers(deps: Pick<PlacementDeps, 'providers' | 'log'>, cloud: string | null, query: OfferQuery = {}): Promise<Offer[]> {
  const accounts = [...deps.providers.values()].filter((p) => cloudNames(cloud, p.account));
  return (await Promise.all(accounts.map((p) => offersOf(deps, p, query)))).flat();
}

async function offersOf(deps: Pick<PlacementDeps, 'log'>, provider: Provider, query: OfferQuery): Promise<Offer[]> {
  try {
    return await provider.offers(query);
  } catch (err) {
    const why = err instanceof ProviderError && err.kind === 'bad_credentials' ? 'its credentials were refused' : (err as Error).message;
    deps.log(`provider account ${provider.account} is left out of this round: ${why}`);
    return [];
  }
}
