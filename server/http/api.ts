// Every REST route of the table (protocol/routes.ts), each a few lines over one
// use case. docs/api.md documents them.
import { parseUsageQuery, usage } from '../usage';
import { readStdinPiece, writeJobStdin } from '../jobs/stdin';
import { defaultedRuntimeNotice, type RuntimeLimits } from '../../core/runtime-limit';
import { eq, isNotNull } from 'drizzle-orm';
import { RcError } from '../../core/errors';
import { audit, hosts } from '../../db/schema';
import { SignIn, Submitter } from '../../protocol/api';
import { extendHold } from '../jobs/hold';
import { describeDevice, describeHost, explain, readSheet, writeSheet } from '../describe';
import { HOST_NAME, parseDeviceName } from '../../core/schedule';
import { createToken, identify, issueToken, listTokens, revokeToken } from '../auth';
import { loadDevices, loadHosts } from '../fleet';
import { removeHost, turnHostOff, turnHostOn } from '../host-admin';
import { installScript, joinCommand } from '../install-script';
import { cliFile, cliFiles, cliInstallScript } from '../cli-install';
import { workerPackage } from '../worker-package';
import type { IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { createReadStream } from 'node:fs';
import type { Inventory } from '../inventory';
import { listQueue } from '../queue';
import { loadSamples, parseSamplesQuery } from '../samples';
import { listAudit, parseAuditQuery } from '../audit-log';
import { findJob } from '../jobs/find';
import { killJob } from '../jobs/kill';
import { type JobRow, jobView } from '../jobs/job-view';
import type { Db, Sql } from '../db';
import type { JobEvents } from '../job-events';
import type { OutputWriter } from '../output-writer';
import type { Scheduler } from '../scheduler';
import type { WorkerHub } from '../worker-hub';
import { type StartDeps, startJob } from '../jobs/start';
import { clearQuarantine } from '../quarantine';
import { download, readUpload, upload } from '../files';
import { openStream, pipeJob, replayJob, writeEvent } from './job-stream';
import { listActive, listJobs, parseJobFilter, withAttempts } from '../jobs/list';
import { created, JsonText, readBody, Reply, type Router } from './router';
import type { DeviceSummary } from '../../protocol/wire';
import { crossSiteRefusal, ownOrigins, reachedOverHttps, sessionSetCookie } from './session';
import { STREAM_CONTENT_TYPE } from '../../core/frames';
import { matchTerms, parseSelector } from '../../core/selector';
import { zodMessage } from '../../protocol/zod-message';
import type { LiveFeed } from '../live';
import { auditOrigin, auditTokenId } from '../request-scope';
import type { Metrics } from '../metrics';

/** What the routes need of the controller: its parts, not the controller itself. */
export interface ApiDeps {
  db: Db;
  sql: Sql;
  events: JobEvents;
  writer: OutputWriter;
  outputLimitBytes: number;
  hub: WorkerHub;
  scheduler: Scheduler;
  /** Whether a host's worker is connected to this controller. */
  holds(hostName: string): boolean;
  /** The fleet kept in memory (server/inventory.ts). */
  inventory: Inventory;
  /** The dashboard's live view. */
  live: Pick<LiveFeed, 'changed'>;
  /** The start message a claim here sends for a worker connected elsewhere (StartDeps). */
  announce: StartDeps['announce'];
  /** A revoked token: out of the auth cache, its live sockets cut. */
  cutToken(tokenId: number): void;
  /** RC_RESERVE_AFTER_S: when a multi-GPU job starts holding devices back (GET /api/queue's reasons). */
  reserveAfterS: number;
  /** What GET /metrics serves; its grant latency is observed by startJob too. */
  metrics: Pick<Metrics, 'text' | 'contentType' | 'granted'>;
  /** The fleet's default and maximum --max-runtime (core/runtime-limit.ts). */
  runtimeLimits: RuntimeLimits;
}

/** A Host header fit to put in a command line: a name or address and a port, nothing else. */
const HOST_HEADER = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/** A query flag that is 1, 0 or absent; anything else is a bad_request saying what it does. */
function flag(query: URLSearchParams, key: string, what: string): boolean {
  const v = query.get(key);
  if (v !== null && v !== '1' && v !== '0') throw new RcError('bad_request', `${key}: ${JSON.stringify(v.slice(0, 20))} is not 1 or 0; ${what}`);
  return v === '1';
}

export function registerApi(router: Router, c: ApiDeps): void {
  const { db, sql } = c;

  router.on('GET /api/whoami', async ({ identity }) => ({
    tokenId: identity.tokenId,
    kind: identity.kind,
    name: identity.name,
    submitter: identity.submitter,
  }));

  router.on('GET /api/devices', async ({ query }) => {
    const parsed = parseSelector(query.get('select') ?? '');
    if (!parsed.ok) throw new RcError('bad_selector', parsed.error.message);
    const details = flag(query, 'details', "details=1 adds each label's source and age");
    const all = flag(query, 'all', 'all=1 adds the devices of removed hosts');
    if (all) {
      // Rare (rc devices --all): the removed hosts' devices come from the database, after the fleet in memory.
      const [here, removed] = await Promise.all([c.inventory.rows(parsed.terms), loadDevices(sql, { details, removed: true })]);
      const listed = details ? here : here.map(({ labelDetails: _, ...d }) => d);
      return { devices: [...listed, ...removed.filter((d) => matchTerms(parsed.terms, d.labels))] };
    }
    if (details) return { devices: await c.inventory.rows(parsed.terms) };
    return new JsonText<{ devices: DeviceSummary[] }>(await c.inventory.listing(parsed.terms));
  });

  router.on('GET /api/hosts', async ({ query }) => ({ hosts: await loadHosts(sql, undefined, { all: flag(query, 'all', 'all=1 adds removed hosts') }) }));

  router.on('GET /api/fleet', async ({ query }) => {
    const host = query.get('host');
    if (host !== null && !HOST_NAME.test(host))
      throw new RcError('bad_request', `host: ${JSON.stringify(host.slice(0, 100))} is not a host name; leave it out for the whole fleet`);
    if (host !== null && !(await c.inventory.hasHost(host)))
      throw new RcError('not_found', `no host is named ${host}; rc admin hosts lists them (GET /api/hosts)`);
    return c.inventory.fleet(host ?? undefined);
  });

  router.on('GET /api/hosts/:name', async ({ params }) => describeHost(sql, params.name));

  router.on('GET /api/samples', async ({ query }) => ({ samples: await loadSamples(sql, parseSamplesQuery(query)) }));

  router.on('GET /api/queue', async () => ({ jobs: await listQueue(sql, c.reserveAfterS, () => c.inventory.rows()) }));

  router.on('GET /api/audit', async ({ query }) => ({ entries: await listAudit(sql, parseAuditQuery(query)) }));
  router.on('GET /api/usage', async ({ query }) => usage(sql, parseUsageQuery(query)));

  router.on('GET /api/devices/:name', async ({ params }) => describeDevice(sql, params.name));

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

  router.on('POST /api/explain', async ({ body }) => explain(sql, () => c.inventory.rows(), body.selector, body.device ?? null, body.gpu ?? null));

  router.on('POST /api/admin/hosts/:name/probe', async ({ params }) => {
    const [known] = await db.select({ name: hosts.name, status: hosts.status }).from(hosts).where(eq(hosts.name, params.name));
    if (!known) throw new RcError('not_found', `no host is named ${params.name}; rc admin hosts lists them`);
    // Connected here, or to another controller (which the order reaches through the bus).
    if (c.holds(params.name) || known.status === 'online') {
      c.hub.probeNow(params.name);
      return { requested: true };
    }
    // The host's state, not the server's: its worker probes again when it reconnects.
    throw new RcError('conflict', `the worker of ${params.name} is not connected; it probes again when it reconnects`);
  });

  // A job that gave no --max-runtime got the fleet's: its submitter is told so, once (per controller, not on every job).
  const told = new Set<string>();
  const toldOnce = (job: JobRow, limits: RuntimeLimits): string[] => {
    if (told.has(job.submitter)) return [];
    if (told.size >= 10_000) told.clear();
    told.add(job.submitter);
    return [defaultedRuntimeNotice(job.id, job.maxRuntimeS!, limits)];
  };
  router.on('POST /api/jobs', async ({ req, res, identity, body }) => {
    // A terminal needs someone attached from its start: it is opened on the /tty socket.
    if (body.kind === 'tty') throw new RcError('bad_request', 'kind: a terminal is opened on the /tty socket (rc run --tty, or the dashboard), not here');
    const streaming = (req.headers.accept ?? '').includes(STREAM_CONTENT_TYPE);
    const notices = (job: JobRow) => (body.kind === 'run' && body.maxRuntimeS == null && job.maxRuntimeS !== null ? toldOnce(job, c.runtimeLimits) : []);
    const { job, refused } = await startJob(c, identity, body, (job, position) => {
      if (!streaming) return;
      // The headers and the first event leave in one packet: one wake-up less for the client.
      res.cork();
      openStream(res);
      pipeJob(c.events, job.id, res);
      writeEvent(res, { type: 'queued', jobId: job.id, position });
      for (const message of notices(job)) writeEvent(res, { type: 'notice', message });
      res.uncork();
    });
    // The stream (if any) ends with the cancellation's exit event.
    if (refused) {
      if (!streaming) throw new RcError('busy', refused);
      return;
    }
    if (streaming) return;
    const [now] = await sql<JobRow[]>`select * from jobs where id = ${job.id}`;
    const said = notices(job);
    return created({ job: jobView(now!), ...(said.length ? { notices: said } : {}) });
  });

  router.on('GET /api/jobs', async ({ query }) => ({ jobs: await listJobs(sql, parseJobFilter(query)) }));

  router.on('GET /api/ps', async () => ({ jobs: await listActive(sql) }));

  // Stored output as a frame stream; ?follow=1 keeps streaming until the job ends (rc logs -f, rc attach).
  router.on('GET /api/jobs/:id/stream', async ({ params, query, res }) => {
    const job = await findJob(sql, params.id);
    const after = Number(query.get('after') ?? '0');
    if (!Number.isSafeInteger(after) || after < 0) throw new RcError('bad_request', 'after must be a sequence number (0 or more)');
    openStream(res);
    // A terminal's output goes only to the terminal (server/tty.ts): there is nothing stored to replay.
    if (job.kind === 'tty') writeEvent(res, { type: 'notice', message: `job ${job.id} was an interactive terminal (--tty); its output is not stored` });
    await replayJob({ sql, events: c.events, writer: c.writer, outputLimitBytes: c.outputLimitBytes }, job.id, res, query.get('follow') === '1', after);
  });

  router.on('GET /api/jobs/:id', async ({ params }) => {
    const [job] = await withAttempts(sql, [await findJob(sql, params.id)]);
    return { job: job! };
  });

  router.on('POST /api/jobs/:id/kill', async ({ body, params, identity }) => {
    const job = await killJob(c, identity, (await findJob(sql, params.id)).id, body.submitter);
    return { job: jobView(job) };
  });

  // rc run reading a pipe: the next piece of the job's stdin (server/jobs/stdin.ts).
  router.on('POST /api/jobs/:id/stdin', async ({ req, params, query, identity }) => {
    const submitter = Submitter.safeParse(query.get('submitter') ?? '');
    if (!submitter.success) throw new RcError('bad_request', zodMessage(submitter.error));
    const offsetText = query.get('offset') ?? '';
    if (!/^\d{1,15}$/.test(offsetText)) throw new RcError('bad_request', 'offset: the bytes of stdin sent before this piece (0 or more)');
    const eof = query.get('eof');
    if (eof !== null && eof !== '1') throw new RcError('bad_request', 'eof: 1 (this piece ends the input), or leave it out');
    const data = await readStdinPiece(req);
    return writeJobStdin(c, identity, params.id, { submitter: submitter.data, offset: Number(offsetText), data, eof: eof === '1' });
  });

  // rc cp: one file to or from a device's workspace, through the controller (server/files.ts).
  const copyDeps = { sql, events: c.events, hub: c.hub, freed: () => c.scheduler.pokeIfQueued() };
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

  router.on('POST /api/holds/:id/release', async ({ body, params, identity }) => {
    return { job: jobView(await killJob(c, identity, (await holdOf(params.id)).id, body.submitter, 'released')) };
  });

  router.on('POST /api/holds/:id/extend', async ({ body, params, identity }) => {
    const { submitter, ttlS } = body;
    return { job: jobView(await extendHold(c, identity, await holdOf(params.id), submitter, ttlS)) };
  });

  /** The job, if it is a hold; a clear error otherwise. */
  async function holdOf(id: string) {
    const job = await findJob(sql, id, 'hold');
    if (job.kind !== 'hold') throw new RcError('bad_request', `${id} is not a hold but a ${job.kind} job; stop it with rc kill ${id}`);
    return job;
  }

  /** Where hosts reach this controller: RC_PUBLIC_URL, or the address this request came to. */
  const controllerUrl = (req: IncomingMessage): string =>
    (
      router.publicUrl ?? `${reachedOverHttps(req, null) ? 'https' : 'http'}://${HOST_HEADER.test(req.headers.host ?? '') ? req.headers.host : 'localhost'}`
    ).replace(/\/+$/, '');

  router.on('GET /install.sh', async ({ req, res }) => {
    const text = Buffer.from(installScript(controllerUrl(req)));
    res.writeHead(200, { 'content-type': 'text/x-shellscript; charset=utf-8', 'content-length': text.length, 'cache-control': 'no-store' });
    res.end(text);
  });

  router.on('GET /install/rc.sh', async ({ req, res }) => {
    const text = Buffer.from(cliInstallScript(controllerUrl(req), cliFiles()));
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

  router.on('POST /api/admin/hosts', async ({ body, identity, req }) => {
    const { name } = body;
    const credential = await db.transaction(async (tx) => {
      // A removed host registered again starts afresh: on, listed, scheduled once its worker connects with the new credential.
      await tx
        .insert(hosts)
        .values({ name })
        .onConflictDoUpdate({
          target: hosts.name,
          set: { removedAt: null, removedBy: null, offSince: null, offBy: null, offReason: null },
          setWhere: isNotNull(hosts.removedAt),
        });
      await tx.insert(audit).values({ actor: `admin:${identity.name}`, action: 'host.register', target: name, origin: auditOrigin(), tokenId: auditTokenId() });
      return createToken(tx, 'host', `worker on ${name}`, name);
    });
    c.live.changed({ what: 'devices', host: name });
    return created({ host: name, credential, command: joinCommand(controllerUrl(req), credential), note: 'shown once; only its hash is kept' });
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

  // The browser signs in by pasting a token; it is kept in an HttpOnly cookie (Secure over HTTPS).
  router.on('POST /api/session', async ({ req, res }) => {
    // A form post from another site must not sign this browser in (login CSRF); scripts send neither header.
    const refusal = req.headers.origin || req.headers['sec-fetch-site'] ? crossSiteRefusal(req.headers, ownOrigins(req.headers, router.publicUrl)) : null;
    if (refusal) throw new RcError('forbidden', `${refusal}; sign in from the dashboard itself`);
    const { token } = await readBody(req, SignIn, { form: true });
    const identity = await identify(db, token);
    if (!identity || identity.kind === 'host') throw new RcError('unauthorized', 'that token is not a valid client or admin token');
    const cookie = sessionSetCookie(token, reachedOverHttps(req, router.publicUrl));
    if ((req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      res.writeHead(303, { location: '/', 'set-cookie': cookie });
      res.end();
      return;
    }
    return new Reply({ kind: identity.kind, name: identity.name }, 200, { 'set-cookie': cookie });
  });

  // Prometheus's scrape (docs/operators.md, "Metrics"): a client or admin token, as `bearer_token` sends it.
  router.on('GET /metrics', async ({ res }) => {
    const text = Buffer.from(await c.metrics.text());
    res.writeHead(200, { 'content-type': c.metrics.contentType, 'content-length': text.length, 'cache-control': 'no-store' });
    res.end(text);
  });

  router.on(
    'DELETE /api/session',
    async ({ req }) => new Reply({ ok: true }, 200, { 'set-cookie': sessionSetCookie(null, reachedOverHttps(req, router.publicUrl)) }),
  );
}
