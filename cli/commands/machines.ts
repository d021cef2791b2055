// rc offers: the cheapest machine shapes the provider accounts offer now;
// rc machines: the machines rented from them, with what they cost so far;
// rc machines rm: delete one now.
import { EXIT } from '../../core/exit-codes';
import { idleUntilText, localClock } from '../../core/until-text';
import type { OfferView, OffersQuery } from '../../protocol/wire';
import type { Client } from '../client';
import { parseFlags, stringFlag } from '../flags';
import { err, json, out, table, usage } from '../output';

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
offline, terminating (--all: terminated ones too): ID STATE CLOUD GPU $/H
JOB IDLE UNTIL COST. JOB is the job it is for now; IDLE UNTIL when an idle
one is deleted (its last job's --keep after that job ended); COST its price
× the time since its launch. Below, what every machine cost so far
(terminated ones too) by team: a job's part is its machine's price × the
time it ran there, charged to its token's team; idle is machine time no job
ran in. A price marked * is simulated. rc machines rm deletes one now (an
admin token; audited).
      --all                 terminated machines too
      --json                the API's JSON: { "machines": [ ... ], "costs": { ... } } (docs/api.md)
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
  const now = Date.now();
  const clock = localClock(now);
  if (!r.machines.length) out(parsed.flags.has('all') ? 'no machines\n' : 'no live machines (rc machines --all lists terminated ones)\n');
  else
    out(
      table(
        ['ID', 'STATE', 'CLOUD', 'GPU', '$/H', 'JOB', 'IDLE UNTIL', 'COST'],
        r.machines.map((m) => [
          m.id,
          m.state,
          m.account,
          gpuText(m),
          `${price(m)}${m.spot ? ' spot' : ''}`,
          m.jobId ?? '-',
          idleUntilText(m.idleUntil, now, clock),
          dollars(m.costSoFar, m.simulated),
        ]),
      ),
    );
  // What every machine cost so far (terminated ones too), by the team whose jobs ran on it; idle is no team's.
  const c = r.costs;
  if (c.total.cost > 0 || c.byTeam.length) {
    out(`\ncost so far, every machine (terminated ones too): ${dollars(c.total.cost, c.total.simulated)}\n`);
    out(table(['TEAM', 'COST'], [...c.byTeam.map((t) => [t.team, dollars(t.cost, t.simulated)]), ['idle', dollars(c.idle.cost, c.idle.simulated)]]));
  }
  if (r.machines.some((m) => m.simulated) || c.total.simulated) out("* simulated price (the local provider's table): no one is billed for it\n");
  return EXIT.ok;
}

function gpuText(o: Pick<OfferView, 'gpuModel' | 'gpuCount'>): string {
  return o.gpuModel ? `${o.gpuCount}x ${o.gpuModel}` : '-';
}

/** `2.10`, or `2.10*` when simulated. */
function price(o: Pick<OfferView, 'pricePerHour' | 'simulated'>): string {
  return `${o.pricePerHour.toFixed(2)}${o.simulated ? '*' : ''}`;
}

/** `$2.10`, or `$2.10*` when some of it is at a simulated price: rounded to cents here, never in a sum. */
function dollars(cost: number, simulated: boolean): string {
  return `$${cost.toFixed(2)}${simulated ? '*' : ''}`;
}
