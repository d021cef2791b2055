// The fleet as people and agents read it: devices, hosts, samples, the queue,
// the audit log, usage, sheets and notes, explain, and a re-probe.
import { hostStatus } from '../../host-admin';
import { parseUsageQuery, parseUsageSeriesQuery, usage, usageSeries } from '../../usage';
import { parseTeamsUsageQuery, teamsUsage } from '../../team-usage';
import { standingOf } from '../../limits';
import { RcError } from '../../../core/errors';
import { describeDevice, describeHost, explain, readSheet, writeSheet } from '../../describe';
import { HOST_NAME, parseDeviceName } from '../../../core/schedule';
import { loadDevices, loadHosts } from '../../fleet';
import { listQueue } from '../../queue';
import { shown } from '../../reservations';
import { loadSamples, parseSamplesQuery } from '../../samples';
import { listAudit, parseAuditQuery } from '../../audit-log';
import { JsonText, type Router } from '../router';
import type { DeviceSummary } from '../../../protocol/wire';
import { matchTerms, parseSelector } from '../../../core/selector';
import { type ApiDeps, flag } from '../route-deps';

export function registerFleetRoutes(router: Router, c: ApiDeps): void {
  const { sql } = c;
  router.on('GET /api/whoami', async ({ identity }) => ({
    tokenId: identity.tokenId,
    kind: identity.kind,
    name: identity.name,
    submitter: identity.submitter,
    // Its team, and its limits each with what is left (server/limits.ts).
    ...(await standingOf(sql, identity.tokenId)),
  }));

  router.on('GET /api/notices', async () => ({ notices: c.notices() }));

  router.on('GET /api/devices', async ({ query }) => {
    const parsed = parseSelector(query.get('select') ?? '');
    if (!parsed.ok) throw new RcError('bad_selector', parsed.error.message);
    const details = flag(query, 'details', "details=1 adds each label's source and age");
    const all = flag(query, 'all', 'all=1 adds the devices of removed hosts');
    // Free devices held back for a queued job are listed as reserved.
    const reserved = await c.reservations.now();
    if (all) {
      // Rare (rc devices --all): the removed hosts' devices come from the database, after the fleet in memory.
      const [here, removed] = await Promise.all([c.inventory.rows(parsed.terms), loadDevices(sql, { details, removed: true })]);
      const listed = details ? here : here.map(({ labelDetails: _, ...d }) => d);
      return { devices: [...listed.map((d) => shown(d, reserved)), ...removed.filter((d) => matchTerms(parsed.terms, d.labels))] };
    }
    if (details) return { devices: (await c.inventory.rows(parsed.terms)).map((d) => shown(d, reserved)) };
    return new JsonText<{ devices: DeviceSummary[] }>(await c.inventory.listing(parsed.terms, reserved));
  });

  router.on('GET /api/hosts', async ({ query }) => ({ hosts: await loadHosts(sql, undefined, { all: flag(query, 'all', 'all=1 adds removed hosts') }) }));

  router.on('GET /api/fleet', async ({ query }) => {
    const host = query.get('host');
    if (host !== null && !HOST_NAME.test(host))
      throw new RcError('bad_request', `host: ${JSON.stringify(host.slice(0, 100))} is not a host name; leave it out for the whole fleet`);
    if (host !== null && !(await c.inventory.hasHost(host)))
      throw new RcError('not_found', `no host is named ${host}; rc admin hosts lists them (GET /api/hosts)`);
    return c.inventory.fleet(host ?? undefined, await c.reservations.now());
  });

  router.on('GET /api/hosts/:name', async ({ params }) => describeHost(sql, params.name, await c.reservations.now()));

  router.on('GET /api/samples', async ({ query }) => ({ samples: await loadSamples(sql, parseSamplesQuery(query)) }));

  router.on('GET /api/queue', async () => ({
    jobs: await listQueue(sql, c.reserveAfterS, () => c.inventory.rows(), c.fairShare, c.quotas, c.machines.providers.length ? c.machines.maxMachines : null),
  }));

  router.on('GET /api/audit', async ({ query, identity }) => ({
    entries: await listAudit(sql, parseAuditQuery(query), identity.kind === 'admin' ? { kind: 'admin' } : { kind: 'client', tokenId: identity.tokenId }),
  }));
  router.on('GET /api/usage', async ({ query }) => usage(sql, parseUsageQuery(query)));
  router.on('GET /api/usage/series', async ({ query }) => usageSeries(sql, parseUsageSeriesQuery(query)));
  router.on('GET /api/usage/teams', async ({ query }) => teamsUsage(sql, parseTeamsUsageQuery(query), c.fairShare.halfLifeS));

  router.on('GET /api/devices/:name', async ({ params }) => describeDevice(sql, params.name, await c.reservations.now()));

  router.on('PUT /api/devices/:name/note', async ({ body, params, identity }) => {
    const name = parseDeviceName(params.name);
    if (!name) throw new RcError('not_found', `no device is named ${params.name}; device names look like host:gpu0`);
    const note = await writeSheet(sql, name.hostName, name.index, body.body, `admin:${identity.name}`, body.ifUpdatedAt);
    c.live.changed({ what: 'sheet', host: name.hostName });
    return { note };
  });

  router.on('GET /api/hosts/:name/sheet', async ({ params }) => ({ sheet: await readSheet(sql, params.name) }));

  router.on('PUT /api/hosts/:name/sheet', async ({ body, params, identity }) => {
    const sheet = await writeSheet(sql, params.name, -1, body.body, `admin:${identity.name}`, body.ifUpdatedAt);
    c.live.changed({ what: 'sheet', host: params.name });
    return { sheet };
  });

  // A reserved device is not free for the job being explained: no other job starts on it.
  router.on('POST /api/explain', async ({ body }) => {
    const fleet = async () => {
      const [rows, reserved] = await Promise.all([c.inventory.rows(), c.reservations.now()]);
      return rows.map((d) => shown(d, reserved));
    };
    return explain(sql, fleet, body.selector, body.device ?? null, body.gpu ?? null, body.gpus);
  });

  router.on('POST /api/admin/hosts/:name/probe', async ({ params }) => {
    const status = await hostStatus(sql, params.name);
    if (status === null) throw new RcError('not_found', `no host is named ${params.name}; rc admin hosts lists them`);
    // Connected here, or to another controller (which the order reaches through the bus).
    if (c.holds(params.name) || status === 'online') {
      c.hub.probeNow(params.name);
      return { requested: true };
    }
    // The host's state, not the server's: its worker probes again when it reconnects.
    throw new RcError('conflict', `the worker of ${params.name} is not connected; it probes again when it reconnects`);
  });
}
