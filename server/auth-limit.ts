// Token guesses, limited per client address: after `failures` refused
// credentials within `windowMs`, that address is refused (rate_limited)
// until the oldest of them is a window old; meanwhile no credential from it
// is looked up, not even a correct one (else a guess could tell by the
// answer). The client is the connection's address (rc trusts no
// X-Forwarded-For); IPv6 addresses count by their /64, which one machine
// usually holds whole. Memory is bounded: at most `maxClients` addresses
// are remembered, the one that failed longest ago forgotten first.
import { isIPv6 } from 'node:net';
import { RcError } from '../core/errors';

export interface AuthLimitOptions {
  /** Refused credentials an address may present within the window; 0: no limit. */
  failures: number;
  windowMs: number;
  /** Addresses remembered at most. */
  maxClients?: number;
}

const MAX_CLIENTS = 10_000;

/** The refusal: a 429 with Retry-After (REST), or the socket handshake's error. */
export class RateLimited extends RcError {
  constructor(
    readonly client: string,
    readonly retryAfterS: number,
  ) {
    super(
      'rate_limited',
      `too many refused tokens from ${client}: no token from it is checked for ${retryAfterS} s; check RC_TOKEN (rc admin tokens lists the valid ones)`,
    );
  }
}

export class AuthLimit {
  /** Per client, the times of its refused credentials within the window, oldest first; ordered by the last failure. */
  private readonly clients = new Map<string, number[]>();
  private readonly maxClients: number;

  constructor(
    private readonly opts: AuthLimitOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.maxClients = opts.maxClients ?? MAX_CLIENTS;
  }

  /** Throws RateLimited while this address may not present a credential. */
  check(address: string | undefined): void {
    const wait = this.retryAfterMs(address);
    if (wait > 0) throw new RateLimited(clientKey(address), Math.ceil(wait / 1000));
  }

  /** Milliseconds until this address may present a credential again; 0: now. */
  retryAfterMs(address: string | undefined): number {
    if (this.opts.failures <= 0) return 0;
    const times = this.recent(clientKey(address));
    if (times.length < this.opts.failures) return 0;
    return times[times.length - this.opts.failures]! + this.opts.windowMs - this.now();
  }

  /** Counts a refused credential from this address. */
  failed(address: string | undefined): void {
    if (this.opts.failures <= 0) return;
    const key = clientKey(address);
    const times = this.recent(key);
    times.push(this.now());
    // Only the last `failures` matter.
    if (times.length > this.opts.failures) times.splice(0, times.length - this.opts.failures);
    this.clients.delete(key);
    this.forgetOld();
    this.clients.set(key, times);
  }

  /** How many addresses are remembered (for tests). */
  get size(): number {
    return this.clients.size;
  }

  /** The address's failures still within the window. */
  private recent(key: string): number[] {
    const times = this.clients.get(key);
    if (!times) return [];
    const since = this.now() - this.opts.windowMs;
    while (times.length && times[0]! <= since) times.shift();
    return times;
  }

  /** Makes room for one more: those whose last failure is out of the window, then, if still full, the one that failed longest ago. */
  private forgetOld(): void {
    const since = this.now() - this.opts.windowMs;
    for (const [key, times] of this.clients) {
      if (this.clients.size < this.maxClients && times[times.length - 1]! > since) break;
      this.clients.delete(key);
    }
  }
}

/** The client an address counts as: IPv4 as it is (without ::ffff:), IPv6 by its /64. */
export function clientKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (v4) return v4[1]!;
  if (!isIPv6(address)) return address;
  const [head, tail = ''] = address.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
