// rc offers: the cheapest machine shapes the provider accounts offer now;
// rc machines: the machines rented from them, with what they cost so far;
// rc machines rm: delete one now.
import { EXIT } from '../../core/exit-codes';
import type { MachineView, OfferView, OffersQuery } from '../../protocol/wire';
import type { Client } from '../client';
import { parseFlags, stringFlag } from '../flags';
import { age, err, json, out, table, usage } from '../output';

export const OFFERS_HELP = `usage: rc offers [--gpu A100:2,H100] [--cpus n] [--ram GB] [--disk GB] [--spot]
                 [--cloud provider[/account]] [--max-price $] [--cuda 12.4] [--limit n] [--json]

The cheapest machine shapes that fit, across the provider accounts the
controller is configured with (20, or --limit n, up to 200): CLOUD GPU VRAM
CPUS RAM $/H SPOT REGION, in US dollars an hour. Without --spot only on-demand
offers; with it spot and on-demand compete on price. A price marked * is
simulated (the local provider's table). An account that fails to answer is a
warning on stderr, not an error.
      --gpu <choices>       GPU models or families and counts (A100:2,H100)
      --cpus/--ram/--disk   at least this many CPUs, GiB of RAM, GiB of disk
      --cloud <p[/a]>       only this provider (local, runpod) or account (runpod/lab-b)
      --max-price <$>       at most this many dollars an hour
      --cuda <version>      a driver that supports at least this CUDA version
      --json                the API's JSON: { "offers": [ ... ], "warnings": [ ... ] } (docs/api.md)
`;

export const MACHINES_HELP = `usage: rc machines [--all] [--json]
       rc machines rm <id>

The machines rented from providers: provisioning, booting, idle, busy,
offline, terminating (--all: terminated ones too), each with its price and
cost so far (the price × the time since its launch; a price marked * is
simulated). rc machines rm deletes one now (an admin token; audited).
      --all                 terminated machines too
      --json                the API's JSON: { "machines": [ ... ] } (docs/api.md)
`;

const QUERY_FLAGS = ['gpu', 'cpus', 'ram', 'disk', 'cloud', 'max-price', 'cuda', 'limit'] as const;

export async function offers(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'offers',
    args,
    [...QUERY_FLAGS.map((name) => ({ name, type: 'string' as const })), { name: 'spot', type: 'boolean' }, { name: 'json', type: 'boolean' }],
    false,
  );
  if (parsed.rest.length) usage(`rc offers takes no arguments (got ${parsed.rest[0]}); see rc offers --help`);
  // The controller checks each value (one rule: server/machines/offers.ts); its messages name the query key.
  const query: OffersQuery = {};
  for (const name of QUERY_FLAGS) {
    const v = stringFlag(parsed, name);
    if (v !== undefined) query[name] = v;
  }
  if (parsed.flags.has('spot')) query.spot = '1';
  const r = await client.call('GET /api/offers', { query });
  for (const w of r.warnings) err(`warning: ${w}\n`);
  if (parsed.flags.has('json')) {
    json(r);
    return EXIT.ok;
  }
  if (!r.offers.length) {
    out('no offer fits\n');
    return EXIT.ok;
  }
  out(
    table(
      ['CLOUD', 'GPU', 'VRAM', 'CPUS', 'RAM', '$/H', 'SPOT', 'REGION'],
      r.offers.map((o) => [
        o.account,
        gpuText(o),
        o.vramGiB ? `${o.vramGiB}G` : '-',
        String(o.cpus),
        `${o.ramGiB}G`,
        price(o),
        o.spot ? 'spot' : '-',
        o.region ?? '-',
      ]),
    ),
  );
  if (r.offers.some((o) => o.simulated)) out("* simulated price (the local provider's table)\n");
  return EXIT.ok;
}

export async function machines(client: Client, args: readonly string[]): Promise<number> {
  if (args[0] === 'rm') {
    const rest = parseFlags('machines rm', args.slice(1), [{ name: 'json', type: 'boolean' }], false);
    if (rest.rest.length !== 1) usage('rc machines rm takes one machine id: rc machines rm <id>');
    const { machine } = await client.call('DELETE /api/machines/:id', { id: rest.rest[0]! });
    if (rest.flags.has('json')) json({ machine });
    else out(`${machine.id}: ${machine.state}${machine.terminatedWhy ? ` (${machine.terminatedWhy})` : ''}\n`);
    return EXIT.ok;
  }
  const parsed = parseFlags(
    'machines',
    args,
    [
      { name: 'all', type: 'boolean' },
      { name: 'json', type: 'boolean' },
    ],
    false,
  );
  if (parsed.rest.length) usage(`rc machines takes no arguments but rm (got ${parsed.rest[0]}); see rc machines --help`);
  const r = await client.call('GET /api/machines', { query: parsed.flags.has('all') ? { all: '1' } : {} });
  if (parsed.flags.has('json')) {
    json(r);
    return EXIT.ok;
  }
  if (!r.machines.length) {
    out(parsed.flags.has('all') ? 'no machines\n' : 'no live machines (rc machines --all lists terminated ones)\n');
    return EXIT.ok;
  }
  out(
    table(
      ['ID', 'STATE', 'CLOUD', 'GPU', '$/H', 'SPOT', 'AGE', 'COST'],
      r.machines.map((m) => [m.id, m.state, m.account, gpuText(m), price(m), m.spot ? 'spot' : '-', age(m.createdAt), cost(m)]),
    ),
  );
  if (r.machines.some((m) => m.simulated)) out("* simulated price (the local provider's table)\n");
  return EXIT.ok;
}

function gpuText(o: Pick<OfferView, 'gpuModel' | 'gpuCount'>): string {
  return o.gpuModel ? `${o.gpuCount}x ${o.gpuModel}` : '-';
}

/** `2.10`, or `2.10*` when simulated. */
function price(o: Pick<OfferView, 'pricePerHour' | 'simulated'>): string {
  return `${o.pricePerHour.toFixed(2)}${o.simulated ? '*' : ''}`;
}

function cost(m: MachineView): string {
  return `$${m.costSoFar.toFixed(2)}${m.simulated ? '*' : ''}`;
}
