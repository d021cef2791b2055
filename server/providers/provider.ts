// What a machine provider answers (seed 002, "Machines and costs"; issue 34):
// five idempotent calls, and nothing else. The controller owns everything
// around them: the machines table (a machine is recorded, with the instance
// name it will carry, before launch is called), placement and the cheapest
// fit, keep timers, restarts and the sweeper (the only reader of list()).
// A provider never decides; it answers for one account.
import type { OfferView } from '../../protocol/wire';

/** One priced machine shape an account offers now: the wire's OfferView (rc offers prints them as they are). */
export type Offer = OfferView;

/** What offers() is asked (core/machine-fit.ts has the rule every offer is judged by). */
export type { OfferQuery } from '../../core/machine-fit';
import type { OfferQuery } from '../../core/machine-fit';

/** What launch() is given: the instance's name (recorded before the call) and how it joins the controller. */
export interface LaunchSpec {
  /** `<prefix>-<machine id>`: list() finds it by the prefix, the machines table by the whole name. */
  name: string;
  offer: Offer;
  /** The controller's URL and the host's one-time join key: the instance starts a worker that joins with them. */
  controllerUrl: string;
  joinKey: string;
}

/** An instance as the provider sees it. */
export type InstanceState = 'pending' | 'running' | 'preempted' | 'gone';

export interface InstanceStatus {
  name: string;
  state: InstanceState;
}

/** A provider refused a call for a reason the controller acts on (skip the offer, skip the account for the round). */
export class ProviderError extends Error {
  constructor(
    /** no_capacity: try the next offer; bad_credentials: skip the account this round; failed: the call failed (the offer is skipped for a while). */
    readonly kind: 'no_capacity' | 'bad_credentials' | 'failed',
    message: string,
  ) {
    super(message);
  }
}

export interface Provider {
  /** `local`, `runpod/lab-b`: the provider and the account, as --cloud names them. */
  readonly account: string;
  /** The instance-name prefix of this account's machines (the sweeper's only handle on them). */
  readonly prefix: string;
  offers(query: OfferQuery): Promise<Offer[]>;
  /** Starts the instance and returns once the provider took the request (not once it runs). Idempotent by name. */
  launch(spec: LaunchSpec): Promise<void>;
  /** Each named instance's state; a name the provider does not know is `gone`. */
  describe(names: readonly string[]): Promise<InstanceStatus[]>;
  /** Deletes it: `gone` once it is (an instance already gone counts as gone), `pending` while it goes (call again). */
  terminate(name: string): Promise<'gone' | 'pending'>;
  /** The account's instances whose names start with `prefix`: nothing else is ever listed, so nothing else is ever swept. */
  list(prefix: string): Promise<string[]>;
}
