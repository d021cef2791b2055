// The typed API client every command uses: a route is called by its name in
// the route table (protocol/routes.ts, `POST /api/jobs/:id/kill`), which types
// its input and its answer. Only types come from there (the name holds the
// method and path), and nothing else is a dependency, so the CLI starts fast.
// Errors come back as `rc: <code>: <sentence>`.
import type { IncomingMessage } from 'node:http';
import { STREAM_CONTENT_TYPE } from '../core/frames';
import type { BytesRoute, JsonRoute, ResponseOf, RouteArgs, RouteName, StreamRoute } from '../protocol/routes';
import { Body, http1Request } from './http1';

/** What both transports give back: a status, and the body. */
export interface Response {
  statusCode: number;
  body: Body;
}
import type { ApiErrorBody } from '../core/errors';
import { EXIT, exitCodeForError } from '../core/exit-codes';
import type { CliConfig } from './config';
import { fail } from './output';

export class Client {
  constructor(private readonly config: CliConfig) {}

  get submitter(): string {
    return this.config.submitter;
  }

  /** For the terminal socket (rc run --tty). */
  get controller(): string {
    return this.config.controller;
  }

  get token(): string {
    return this.config.token;
  }

  /** Calls a route that answers with JSON (protocol/routes.ts types both). */
  async call<N extends JsonRoute>(name: N, ...[input]: RouteArgs<N>): Promise<ResponseOf<N>> {
    const res = await this.send(name, input, 'application/json');
    const parsed = parseJson((await readAll(res.body)).toString('utf8'));
    if (res.statusCode >= 400) failFromBody(res.statusCode, parsed);
    return parsed as ResponseOf<N>;
  }

  /** Sends a request whose answer is a frame stream; a non-200 answer is turned into a CLI error. */
  async stream<N extends StreamRoute>(name: N, ...[input]: RouteArgs<N>): Promise<Body> {
    const res = await this.send(name, input, STREAM_CONTENT_TYPE);
    if (res.statusCode !== 200) failFromBody(res.statusCode, parseJson((await readAll(res.body)).toString('utf8')));
    return res.body;
  }

  /** Raw bytes down (rc cp); an error answer is turned into a CLI error. */
  async bytes<N extends BytesRoute>(name: N, ...[input]: RouteArgs<N>): Promise<Buffer> {
    const res = await this.send(name, input, 'application/octet-stream');
    const data = await readAll(res.body);
    if (res.statusCode >= 400) failFromBody(res.statusCode, parseJson(data.toString('utf8')));
    return data;
  }

  private send(name: RouteName, input: { query?: unknown; body?: unknown } = {}, accept: string): Promise<Response> {
    const [method, pattern] = name.split(' ') as [string, string];
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries((input.query ?? {}) as Record<string, unknown>)) if (v !== undefined) query.set(k, String(v));
    const path = pattern.replace(/:(\w+)/g, (_, k: string) => encodeURIComponent((input as Record<string, string>)[k]!));
    const url = new URL(this.config.controller + path + (query.size ? `?${query}` : ''));
    const body = input.body;
    const raw = Buffer.isBuffer(body);
    const payload = body === undefined ? undefined : raw ? body : JSON.stringify(body);
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.config.token}`,
      accept,
      ...(payload === undefined
        ? {}
        : { 'content-type': raw ? 'application/octet-stream' : 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
    };
    const sent: Promise<Response> =
      url.protocol === 'https:'
        ? // https (and TLS with it) is loaded only when used.
          new Promise((resolve, reject) => {
            const { request } = process.getBuiltinModule('node:https');
            request(url, { method, headers }, (msg) => resolve({ statusCode: msg.statusCode ?? 0, body: bodyOf(msg) }))
              .on('error', reject)
              .end(payload);
          })
        : http1Request(url, method, headers, payload);
    return sent
      .catch((err: NodeJS.ErrnoException) => {
        throw new Error(err.code ?? err.message);
      })
      .catch((err: Error) =>
        fail('unreachable', `cannot reach the controller at ${this.config.controller} (${err.message}); is it running? Check RC_CONTROLLER`, EXIT.unreachable),
      );
  }
}

function readAll(body: Body): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    body.consume({ data: (c) => chunks.push(c), end: () => resolve(Buffer.concat(chunks)), error: reject });
  });
}

/** An https response as a Body: a connection closed before the end is an error. */
function bodyOf(msg: IncomingMessage): Body {
  const body = new Body(() => msg.destroy());
  msg.on('data', (c: Buffer) => body.push(c));
  msg.on('end', () => body.end());
  msg.on('error', (err) => body.end(err));
  msg.on('close', () => body.end(new Error('ECONNRESET')));
  return body;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function failFromBody(status: number, body: unknown): never {
  const err = (body as ApiErrorBody | null)?.error;
  if (err && typeof err.code === 'string') fail(err.code, err.message, exitCodeForError(err.code));
  fail('error', `the controller answered HTTP ${status}`, EXIT.error);
}
