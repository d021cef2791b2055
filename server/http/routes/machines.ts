// Machines from providers: the offers they make (rc offers), the machines
// rented (rc machines) and deleting one (rc machines rm).
import { RcError } from '../../../core/errors';
import { machineCosts } from '../../machines/costs';
import { listMachines } from '../../machines/list';
import { cheapestOffers, parseOffersQuery } from '../../machines/offers';
import type { Router } from '../router';
import { type ApiDeps, flag } from '../route-deps';

const MACHINE_ID = /^m[0-9a-v]{10}$/;

export function registerMachineRoutes(router: Router, c: ApiDeps): void {
  router.on('GET /api/offers', async ({ query }) => cheapestOffers(c.machines.providers, parseOffersQuery(query)));

  router.on('GET /api/machines', async ({ query }) => {
    for (const key of query.keys())
      if (key !== 'all')
        throw new RcError('bad_request', `${JSON.stringify(key.slice(0, 30))} is not a parameter of machines; all=1 lists terminated ones too`);
    const all = flag(query, 'all', 'all=1 lists terminated machines too');
    const [machines, costs] = await Promise.all([listMachines(c.sql, all), machineCosts(c.sql)]);
    return { machines, costs };
  });

  router.on('DELETE /api/machines/:id', async ({ params, identity }) => {
    if (!MACHINE_ID.test(params.id))
      throw new RcError('bad_request', `${JSON.stringify(params.id.slice(0, 30))} is not a machine id (m and 10 characters, as rc machines lists them)`);
    const who = `admin:${identity.name}`;
    const machine = await c.machines.terminate(params.id, `rm by ${identity.name}`, who);
    if (!machine) throw new RcError('not_found', `no machine ${params.id}; rc machines --all lists them`);
    return { machine };
  });
}
