// The admin's routes: hosts (register, off, on, remove), quarantines, tokens; and the
// worker's own check of its credential.
import { RcError } from '../../../core/errors';
import { issueToken, listTokens, revokeToken } from '../../auth';
import { registerHost, removeHost, turnHostOff, turnHostOn } from '../../host-admin';
import { joinCommand, plainHttpWarning } from '../../install-script';
import { workerPackage } from '../../worker-package';
import { clearQuarantine } from '../../quarantine';
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
    const { name, kind, submitter } = body;
    const { token, secret } = await db.transaction((tx) => issueToken(tx, { name, kind, submitter: submitter ?? null }, `admin:${identity.name}`));
    return created({ id: token.id, name, kind, submitter: token.submitter, token: secret, note: 'shown once; only its hash is kept' });
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
