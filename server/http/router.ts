// A small router for /api: one wrapper does auth, body parsing and error
// shaping, so each route is a few lines that call one use case.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import { RcError, type ApiErrorBody } from '../../core/errors';
import { bearer, identify, requireKind, type Identity } from '../auth';
import type { Db } from '../db';

export interface PublicContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  query: URLSearchParams;
}
export interface RouteContext extends PublicContext {
  identity: Identity;
}

type Access = 'client' | 'admin' | 'host' | 'public';
type Handler = (ctx: RouteContext) => Promise<unknown>;

interface Route { method: string; pattern: RegExp; keys: string[]; access: Access; handler: Handler }

const MAX_BODY = 2 * 1024 * 1024;

export class Router {
  private readonly routes: Route[] = [];

  constructor(private readonly db: Db, private readonly log: (msg: string) => void) {}

  add(method: string, path: string, access: 'client' | 'admin' | 'host', handler: Handler): void {
    this.addRoute(method, path, access, handler);
  }

  /** A route anyone may call (only the browser login: it checks the token it is given). */
  addPublic(method: string, path: string, handler: (ctx: PublicContext) => Promise<unknown>): void {
    this.addRoute(method, path, 'public', handler as Handler);
  }

  private addRoute(method: string, path: string, access: Access, handler: Handler): void {
    const keys: string[] = [];
    const pattern = new RegExp('^' + path.replace(/:(\w+)/g, (_, k: string) => { keys.push(k); return '([^/]+)'; }) + '$');
    this.routes.push({ method, pattern, keys, access, handler });
  }

  /** Handles the request, or returns false when the path is not under /api. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'http://x');
    if (!url.pathname.startsWith('/api/') && url.pathname !== '/api') return false;
    try {
      const { route, params } = this.match(req.method ?? 'GET', url.pathname);
      const base: PublicContext = { req, res, params, query: url.searchParams };
      let result: unknown;
      if (route.access === 'public') {
        result = await (route.handler as (ctx: PublicContext) => Promise<unknown>)(base);
      } else {
        const secret = bearer(req.headers.authorization) ?? sessionCookie(req.headers.cookie);
        const identity = requireKind(await identify(this.db, secret), route.access);
        result = await route.handler({ ...base, identity });
      }
      if (!res.headersSent && result !== undefined) sendJson(res, 200, result);
    } catch (err) {
      this.fail(res, err);
    }
    return true;
  }

  private match(method: string, path: string): { route: Route; params: Record<string, string> } {
    let pathMatched = false;
    for (const route of this.routes) {
      const m = route.pattern.exec(path);
      if (!m) continue;
      pathMatched = true;
      if (route.method !== method) continue;
      const params: Record<string, string> = {};
      route.keys.forEach((k, i) => { params[k] = decodeURIComponent(m[i + 1]!); });
      return { route, params };
    }
    throw new RcError('not_found', pathMatched ? `${method} is not supported on ${path}` : `no API route ${path}; docs/api.md lists them`);
  }

  private fail(res: ServerResponse, err: unknown): void {
    const rc = err instanceof RcError ? err : null;
    if (!rc) this.log(`internal error: ${err instanceof Error ? err.stack : String(err)}`);
    if (res.headersSent) { res.destroy(); return; }
    const body: ApiErrorBody = rc ? rc.toBody() : { error: { code: 'internal', message: 'the controller hit an internal error; its log has the details' } };
    sendJson(res, rc ? rc.status : 500, body);
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', ...headers });
  res.end(text);
}

/** Reads and validates a JSON body; any problem is a `bad_request` that says what is wrong. */
export async function readBody<S extends z.ZodType>(req: IncomingMessage, schema: S): Promise<z.infer<S>> {
  const raw = await readRaw(req);
  let value: unknown;
  const type = req.headers['content-type'] ?? '';
  if (type.startsWith('application/x-www-form-urlencoded')) {
    value = Object.fromEntries(new URLSearchParams(raw));
  } else {
    try {
      value = raw.length ? JSON.parse(raw) : {};
    } catch {
      throw new RcError('bad_request', 'the request body is not valid JSON');
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
    throw new RcError('bad_request', `${where}${issue.message}`);
  }
  return parsed.data;
}

function readRaw(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        // Keep reading (and dropping) the rest so the client gets the answer, not a reset.
        reject(new RcError('payload_too_large', `the request body is over ${MAX_BODY / 1024 / 1024} MiB`));
        req.removeAllListeners('data');
        req.resume();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export const SESSION_COOKIE = 'rc_session';

export function sessionCookie(header: string | undefined): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === SESSION_COOKIE) return decodeURIComponent(v.join('='));
  }
  return null;
}
