// The admin's routes: hosts (register, off, on, remove), quarantines, tokens, teams and limits; and the
// worker's own check of its credential.
import { RcError } from '../../../core/errors';
import { issueToken, listTokens, revokeToken } from '../../auth';
import { registerHost, removeHost, turnHostOff, turnHostOn } from '../../host-admin';
import { joinCommand, plainHttpWarning } from '../../install-script';
import { workerPackage } from '../../worker-package';
import { clearQuarantine } from '../../quarantine';
import { listLimits, setLimits } from '../../limits';
import { createTeam, listTeams, setTeamShare, setTokenTeam } from '../../teams';
import { created, type Router } from '../router';
import { type ApiDeps, controllerUrl } from '../route-deps';

export function registerAdminRoutes(router: Router, c: ApiDeps): void {
  const { db, sql } = c;
  router.on('POST /api/admin/hosts', async ({ body, identity, req }) => {
    const { name } = body;
    // The package the command pins; a controller with none to serve (no build) still registers hosts, unpinned.
    const pkg = await workerPackage().catch(() => null);
    const credential = await registerHost(db, name, `admin:${identity.name}`);
    c.live.changed({ what: 'devices', host: name });
    const url = controllerUrl(router, req);
    return created({
      host: name,
      credential,
      command: joinCommand(url, credential, pkg?.sha256 ?? null),
      warning: plainHttpWarning(url),
      note: 'shown once; only its hash is kept',
    });
  });

  router.on('POST /api/admin/hosts/:name/off', async ({ params, body, identity }) => {
    const r = await turnHostOff(sql, params.name, body.reason ?? null, `admin:${identity.name}`);
    c.live.changed({ what: 'devices', host: params.name });
    return r;
  });

  router.on('POST /api/admin/hosts/:name/on', async ({ params, identity }) => {
    const r = await turnHostOn(sql, params.name, `admin:${identity.name}`);
    c.live.changed({ what: 'devices', host: params.name });
    void c.scheduler.pokeAll();
    return r;
  });

  router.on('DELETE /api/admin/hosts/:name', async ({ params, identity }) => {
    const { host, tokenIds } = await removeHost(sql, params.name, `admin:${identity.name}`);
    // Its worker is cut off wherever it is connected; reconnecting, it is told the host is gone, and stops.
    for (const id of tokenIds) c.cutToken(id);
    c.live.changed({ what: 'devices', host: params.name });
    return { host, revokedTokens: tokenIds.length };
  });

  // rc-worker doctor checks its credential here.
  router.on('GET /api/worker/whoami', async ({ identity }) => ({ host: identity.hostName }));

  router.on('POST /api/admin/devices/:name/clear', async ({ body, params, identity }) => {
    const cleared = await clearQuarantine(sql, params.name, body.reason, `admin:${identity.name}`);
    c.live.changed({ what: 'devices', host: params.name.split(':')[0] });
    void c.scheduler.pokeAll();
    return { cleared: cleared.device, was: cleared.was };
  });

  router.on('POST /api/admin/tokens', async ({ body, identity }) => {
    const { name, kind, submitter, team } = body;
    const { token, secret } = await db.transaction((tx) => issueToken(tx, { name, kind, submitter: submitter ?? null, team }, `admin:${identity.name}`));
    return created({ id: token.id, name, kind, submitter: token.submitter, team: token.team, token: secret, note: 'shown once; only its hash is kept' });
  });

  // Teams, membership and limits (issue 32): each change audited; the next submit reads them.
  router.on('PUT /api/admin/tokens/:id', async ({ params, body, identity }) => {
    const moved = await setTokenTeam(sql, params.id, body.team, `admin:${identity.name}`);
    // Its jobs count against its new team's --gpus limit from the next pass.
    c.quotas.forget();
    void c.scheduler.pokeAll();
    const token = (await listTokens(db)).find((t) => t.id === moved.id)!;
    return { token, was: moved.was };
  });

  router.on('POST /api/admin/teams', async ({ body, identity }) => created({ team: await createTeam(sql, body.name, body.share, `admin:${identity.name}`) }));

  router.on('GET /api/admin/teams', async () => ({ teams: await listTeams(sql) }));

  router.on('PUT /api/admin/teams/:name', async ({ params, body, identity }) => ({
    team: await setTeamShare(sql, params.name, body.share, `admin:${identity.name}`),
  }));

  router.on('GET /api/admin/limits', async ({ query }) => {
    for (const key of query.keys()) if (key !== 'scope') throw new RcError('bad_request', `${key.slice(0, 50)}: GET /api/admin/limits takes only scope`);
    return { limits: await listLimits(sql, query.get('scope')) };
  });

  router.on('PUT /api/admin/limits/:scope', async ({ params, body, identity }) => {
    const limits = await setLimits(sql, params.scope, body, `admin:${identity.name}`);
    // Applied from the next pass here (the others read limits again within a second): a raised one may start jobs now.
    c.quotas.forget();
    void c.scheduler.pokeAll();
    return { limits };
  });

  router.on('GET /api/admin/tokens', async () => ({ tokens: await listTokens(db) }));

  router.on('POST /api/admin/tokens/:id/revoke', async ({ params, identity }) => {
    const id = /^[1-9][0-9]{0,15}$/.test(params.id) ? Number(params.id) : NaN;
    if (!Number.isSafeInteger(id)) throw new RcError('bad_request', `token id: a number from rc admin tokens, not ${JSON.stringify(params.id)}`);
    if (id === identity.tokenId) throw new RcError('bad_request', 'that is the token this request uses; revoke it with another admin token');
    const r = await db.transaction((tx) => revokeToken(tx, id, `admin:${identity.name}`));
    c.cutToken(id);
    return { revoked: r.token, already: r.already };
  });
}
