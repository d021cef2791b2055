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
 */
export async function placeJob(deps: PlacementDeps, jobId: string, wants: MachineWants): Promise<Placed> {
  const accounts = [...deps.providers.values()].filter((p) => cloudNames(wants.cloud, p.account));
  const query = queryOf(wants);
  const offers = (await Promise.all(accounts.map((p) => offersOf(deps, p, query)))).flat().filter((o) => offerFits(o, wants));
  let tried = 0;
  for (const offer of cheapestFirst(offers, wants, deps.failed.skipped)) {
    tried += 1;
    const got = await launchMachineFor(deps, offer, { jobId, maxMachines: deps.maxMachines });
    if ('refused' in got) return got;
    if (got.state !== 'terminated') return { placed: 'launched', machine: got, offer };
    deps.failed.failed(offer);
  }
  return { refused: 'no_offer', tried };
}

async function offersOf(deps: PlacementDeps, provider: Provider, query: OfferQuery): Promise<Offer[]> {
  try {
    return await provider.offers(query);
  } catch (err) {
    const why = err instanceof ProviderError && err.kind === 'bad_credentials' ? 'its credentials were refused' : (err as Error).message;
    deps.log(`provider account ${provider.account} is left out of this round: ${why}`);
    return [];
  }
}
