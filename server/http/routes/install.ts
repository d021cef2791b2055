// What new hosts and CLIs download: the install scripts, the CLI's files, the worker's package.
import { installScript } from '../../install-script';
import { cliFile, cliFiles, cliInstallScript } from '../../cli-install';
import { workerPackage } from '../../worker-package';
import { pipeline } from 'node:stream/promises';
import { createReadStream } from 'node:fs';
import type { Router } from '../router';
import { controllerUrl } from '../route-deps';

export function registerInstallRoutes(router: Router): void {
  router.on('GET /install.sh', async ({ req, res }) => {
    const text = Buffer.from(installScript(controllerUrl(router, req)));
    res.writeHead(200, { 'content-type': 'text/x-shellscript; charset=utf-8', 'content-length': text.length, 'cache-control': 'no-store' });
    res.end(text);
  });

  router.on('GET /install/rc.sh', async ({ req, res }) => {
    const text = Buffer.from(cliInstallScript(controllerUrl(router, req), cliFiles()));
    res.writeHead(200, { 'content-type': 'text/x-shellscript; charset=utf-8', 'content-length': text.length, 'cache-control': 'no-store' });
    res.end(text);
  });

  router.on('GET /api/cli/:file', async ({ params, res }) => {
    const f = cliFile(cliFiles(), params.file);
    const type = f.name.endsWith('.gz') ? 'application/gzip' : 'application/javascript; charset=utf-8';
    res.writeHead(200, { 'content-type': type, 'content-length': f.bytes, 'cache-control': 'no-store', 'x-rc-sha256': f.sha256 });
    // A client that leaves mid-download is no error of ours.
    await pipeline(createReadStream(f.path), res).catch(() => res.destroy());
  });

  router.on('GET /api/worker/package', async ({ res }) => {
    const p = await workerPackage();
    res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': p.bytes.length, 'cache-control': 'no-store', 'x-rc-sha256': p.sha256 });
    res.end(p.bytes);
  });

  router.on('GET /api/worker/package/sha256', async ({ res }) => {
    const p = await workerPackage();
    const text = Buffer.from(`${p.sha256}  rc-worker-${p.version}.tar.gz\n`);
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': text.length, 'cache-control': 'no-store' });
    res.end(text);
  });
}
