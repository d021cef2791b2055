// rc cp: one file to or from a device's workspace, through the controller (server/files.ts).
import { RcError } from '../../../core/errors';
import { Submitter } from '../../../protocol/api';
import { download, readUpload, upload } from '../../files';
import type { Router } from '../router';
import { zodMessage } from '../../../protocol/zod-message';
import type { ApiDeps } from '../route-deps';

export function registerFileRoutes(router: Router, c: ApiDeps): void {
  const { sql } = c;
  const copyDeps = { sql, hub: c.hub, engine: c.engine, freed: () => c.scheduler.pokeIfQueued() };
  const copyArgs = (query: URLSearchParams) => {
    const path = query.get('path');
    if (!path) throw new RcError('bad_request', 'path is required: the file on the device, e.g. /workspace/train.py');
    const submitter = Submitter.safeParse(query.get('submitter') ?? '');
    if (!submitter.success) throw new RcError('bad_request', zodMessage(submitter.error));
    return { path, submitter: submitter.data };
  };
  router.on('PUT /api/devices/:name/files', async ({ req, params, query, identity }) => {
    const { path, submitter } = copyArgs(query);
    const data = await readUpload(req);
    return upload(copyDeps, identity, submitter, params.name, path, data);
  });
  router.on('GET /api/devices/:name/files', async ({ params, query, identity, res }) => {
    const { path, submitter } = copyArgs(query);
    const { data, lease } = await download(copyDeps, identity, submitter, params.name, path);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': data.length, 'cache-control': 'no-store', 'x-rc-lease': lease });
    res.end(data);
  });
}
