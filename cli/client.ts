// The typed API client every command uses: a route is called by its name in
// the route table (protocol/routes.ts, `POST /api/jobs/:id/kill`), which types
// its input and its answer. Only types come from there (the name holds the
// method and path), and nothing else is a dependency, so the CLI starts fast.
// Errors come back as `rc: <code>: <sentence>`.
import type { IncomingMessage } from 'node:http';
import { STREAM_CONTENT_TYPE } from '../core/frames';
import type { BytesRoute, JsonRoute, ResponseOf, RouteArgs, RouteName, StreamRoute } from '../protocol/routes';
import { Body, CONNECT_TIMEOUT, type Deadlines, deadlineError, http1Request, NO_ANSWER, type Response } from './http1';

import type { ApiErrorBody } from '../core/errors';
import { EXIT, exitCodeForError } from '../core/exit-codes';
import { ANSWER_TIMEOUT_MS, type CliConfig, CONNECT_TIMEOUT_MS, MAX_ANSWER_MIB } from './config';
import { fail } from './output';

declare const RC_STANDALONE: boolean;

/** Errors that mean the request never reached a controller: another one in RC_CONTROLLER's list may be tried. */
const NOT_REACHED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', CONNECT_TIMEOUT]);
/** Requests that change nothing: one a controller took and never answered may be asked of the next one. */
const REPEATABLE = new Set(['GET', 'HEAD']);

export class Client {
  /** The controller answering now: the first of the list, until one cannot be reached. */
  private current: string;

  constructor(private readonly config: CliConfig) {
    this.current = config.controller;
  }

  get submitter(): string {
    return this.config.submitter;
  }

  /** For the terminal socket (rc run --tty). */
  get controller(): string {
    return this.current;
  }

  /** RC_CONTROLLER's list. */
  get controllers(): string[] {
    return this.config.controllers.length ? this.config.controllers : [this.config.controller];
  }

  get token(): string {
    return this.config.token;
  }

  /** Calls a route that answers with JSON (protocol/routes.ts types both). */
  async call<N extends JsonRoute>(name: N, ...[input]: RouteArgs<N>): Promise<ResponseOf<N>> {
    const res = await this.send(name, input, 'application/json');
    const parsed = parseJson((await this.readAll(res.body)).toString('utf8'));
    if (res.statusCode >= 400) failFromBody(res.statusCode, parsed, this.config);
    return parsed as ResponseOf<N>;
  }

  /** Sends a request whose answer is a frame stream; a non-200 answer is turned into a CLI error. */
  async stream<N extends StreamRoute>(name: N, ...[input]: RouteArgs<N>): Promise<Body> {
    const res = await this.send(name, input, STREAM_CONTENT_TYPE);
    if (res.statusCode !== 200) failFromBody(res.statusCode, parseJson((await this.readAll(res.body)).toString('utf8')), this.config);
    return res.body;
  }

  /** Raw bytes down (rc cp, at most 16 MiB: core/cp.ts); an error answer is turned into a CLI error. */
  async bytes<N extends BytesRoute>(name: N, ...[input]: RouteArgs<N>): Promise<Buffer> {
    const res = await this.send(name, input, 'application/octet-stream');
    const data = await this.readAll(res.body);
    if (res.statusCode >= 400) failFromBody(res.statusCode, parseJson(data.toString('utf8')), this.config);
    return data;
  }

  /**
   * Sends to the controller in use. One that cannot be reached (refused, or not accepting within
   * RC_CONNECT_TIMEOUT_MS) is passed over for the next of the list, once round it; so is one that took a
   * request that changes nothing and did not answer within RC_ANSWER_TIMEOUT_MS (frozen, overloaded).
   * A request that changes something is not sent twice: the one that did not answer may yet carry it out.
   */
  private send(name: RouteName, input: { query?: unknown; body?: unknown } = {}, accept: string): Promise<Response> {
    return this.reach(name.slice(0, name.indexOf(' ')), (controller) => this.sendTo(controller, name, input, accept));
  }

  /**
   * A request outside the route table (rc mcp's POST /mcp), sent as `send` sends: the token, the same
   * controllers and failover, the same errors. `answerMs` widens RC_ANSWER_TIMEOUT_MS for a request
   * the controller may rightly take longer to answer. The answer comes back as it is, status and headers.
   */
  request(method: string, path: string, headers: Record<string, string>, payload: string, answerMs = 0): Promise<Response> {
    const all = { authorization: `Bearer ${this.config.token}`, 'content-length': String(Buffer.byteLength(payload)), ...headers };
    const deadlines: Deadlines = { connectMs: this.connectMs, answerMs: Math.max(answerMs, this.answerMs), stream: false };
    return this.reach(method, (controller) => this.transport(new URL(controller + path), method, all, payload, deadlines));
  }

  /** Tries `attempt` at the controller in use, then the next ones of the list as `send` says. */
  private async reach(method: string, attempt: (controller: string) => Promise<Response>): Promise<Response> {
    const list = this.controllers;
    const start = Math.max(0, list.indexOf(this.current));
    let last: Error | null = null;
    let lastAt = list[start]!;
    for (let i = 0; i < list.length; i++) {
      const controller = list[(start + i) % list.length]!;
      try {
        const res = await attempt(controller);
        this.current = controller;
        return res;
      } catch (err) {
        last = err as Error;
        lastAt = controller;
        if (NOT_REACHED.has(last.message)) continue;
        if (last.message === NO_ANSWER && REPEATABLE.has(method)) continue;
        break;
      }
    }
    const where = list.length > 1 ? `any of the controllers (${list.join(', ')})` : `the controller at ${list[0]}`;
    if (last?.message === NO_ANSWER) {
      const maybe = REPEATABLE.has(method) ? '' : '; the request may or may not have taken effect (rc ps shows your jobs)';
      return fail(
        'no_answer',
        `${list.length > 1 && REPEATABLE.has(method) ? `none of the controllers (${list.join(', ')})` : `the controller at ${lastAt}`} took the request but did not answer within ${this.answerMs} ms (RC_ANSWER_TIMEOUT_MS)${maybe}; is it stopped or overloaded?`,
        EXIT.unreachable,
        // No answer: a submit carrying its idempotency key is sent again (cli/resend.ts).
        true,
      );
    }
    const why = last?.message === CONNECT_TIMEOUT ? `no connection within ${this.connectMs} ms, RC_CONNECT_TIMEOUT_MS` : last?.message;
    // Reached, then lost (a reset, a hang-up): the request may have been acted on.
    const reached = last !== null && !NOT_REACHED.has(last.message) && last.message !== CONNECT_TIMEOUT;
    return fail('unreachable', `cannot reach ${where} (${why}); is it running? Check RC_CONTROLLER`, EXIT.unreachable, reached);
  }

  private get connectMs(): number {
    return this.config.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  }

  private get answerMs(): number {
    return this.config.answerTimeoutMs ?? ANSWER_TIMEOUT_MS;
  }

  /** A whole answer, held: at most RC_MAX_ANSWER_MIB of it (a controller's answers are far smaller; a stream is never held). */
  readAll(body: Body): Promise<Buffer> {
    const max = this.config.maxAnswerBytes ?? MAX_ANSWER_MIB * 1024 * 1024;
    const at = this.current;
    return new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      body.consume({
        data: (c) => {
          if (size > max) return;
          size += c.length;
          chunks.push(c);
          if (size > max) {
            chunks.length = 0;
            body.end(TOO_LARGE);
          }
        },
        end: () => resolve(Buffer.concat(chunks)),
        error: reject,
      });
    }).catch((err: Error) => {
      if (err === TOO_LARGE)
        fail(
          'answer_too_large',
          `the answer from ${at} is over ${max / 1024 / 1024} MiB (RC_MAX_ANSWER_MIB), more than an rc controller sends; is RC_CONTROLLER right?`,
          EXIT.error,
        );
      if (err.message === NO_ANSWER)
        fail(
          'no_answer',
          `the controller at ${at} stopped answering mid-answer (nothing for ${this.answerMs} ms, RC_ANSWER_TIMEOUT_MS)`,
          EXIT.unreachable,
          true,
        );
      return fail(
        'unreachable',
        `the connection to the controller at ${at} broke mid-answer (${(err as NodeJS.ErrnoException).code ?? err.message})`,
        EXIT.unreachable,
      );
    });
  }

  private sendTo(controller: string, name: RouteName, input: { query?: unknown; body?: unknown }, accept: string): Promise<Response> {
    const [method, pattern] = name.split(' ') as [string, string];
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries((input.query ?? {}) as Record<string, unknown>)) if (v !== undefined) query.set(k, String(v));
    const path = pattern.replace(/:(\w+)/g, (_, k: string) => encodeURIComponent((input as Record<string, string>)[k]!));
    const url = new URL(controller + path + (query.size ? `?${query}` : ''));
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
    const deadlines: Deadlines = { connectMs: this.connectMs, answerMs: this.answerMs, stream: accept === STREAM_CONTENT_TYPE };
    return this.transport(url, method, headers, payload, deadlines);
  }

  /** One request to one controller, by this CLI's transport; a failure is named by its errno code (NOT_REACHED). */
  private transport(url: URL, method: string, headers: Record<string, string>, payload: string | Buffer | undefined, deadlines: Deadlines): Promise<Response> {
    const sent: Promise<Response> =
      // The build's constant: esbuild keeps only one of these in each CLI.
      typeof RC_STANDALONE === 'boolean' && RC_STANDALONE
        ? (require('./fetch-request') as typeof import('./fetch-request')).fetchRequest(url, method, headers, payload, deadlines)
        : url.protocol === 'https:'
          ? httpsRequest(url, method, headers, payload, deadlines)
          : http1Request(url, method, headers, payload, deadlines);
    return sent.catch((err: NodeJS.ErrnoException) => {
      throw new Error(err.code ?? err.message);
    });
  }
}

/** What readAll ends a body with when it is over the bound. */
const TOO_LARGE = new Error('answer too large');

/** An https request (https, and TLS with it, loaded only when used), with the same deadlines as http1.ts's. */
function httpsRequest(
  url: URL,
  method: string,
  headers: Record<string, string>,
  payload: string | Buffer | undefined,
  deadlines: Deadlines,
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const { request } = process.getBuiltinModule('node:https');
    const req = request(url, { method, headers }, (msg) => {
      if (deadlines.stream) req.setTimeout(0);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(msg.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
      resolve({ statusCode: msg.statusCode ?? 0, headers, body: bodyOf(msg) });
    });
    const connecting = setTimeout(() => req.destroy(deadlineError(CONNECT_TIMEOUT)), deadlines.connectMs);
    req.on('socket', (socket) => {
      const connected = () => {
        clearTimeout(connecting);
        req.setTimeout(deadlines.answerMs, () => req.destroy(deadlineError(NO_ANSWER)));
      };
      if (socket.connecting) socket.once('connect', connected);
      else connected();
    });
    req.on('close', () => clearTimeout(connecting));
    req.on('error', reject).end(payload);
  });
}

/** An https response as a Body: a connection closed before the end is an error. */
function bodyOf(msg: IncomingMessage): Body {
  const body = new Body(() => msg.destroy());
  msg.on('data', (c: Buffer) => body.push(c));
  msg.on('end', () => body.end());
  msg.on('error', (err) => body.end(err));
  msg.socket.on('timeout', () => body.end(deadlineError(NO_ANSWER)));
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

function failFromBody(status: number, body: unknown, config: CliConfig): never {
  const err = (body as ApiErrorBody | null)?.error;
  // database_unavailable: nothing was done, or (the database stopped mid-request) it may have been: either way a request safe to repeat may be sent again.
  if (err && typeof err.code === 'string')
    fail(err.code, err.message + hintFor(err.code, err.message, config), exitCodeForError(err.code), err.code === 'database_unavailable');
  fail('error', `the controller answered HTTP ${status}`, EXIT.error);
}

/** What the controller cannot know of this shell: how to act otherwise from here. */
export function hintFor(code: string, message: string, config: Pick<CliConfig, 'submitter' | 'checkoutClient'>): string {
  // An admin command run with this checkout's client token: the checkout has the admin token too.
  if (code === 'forbidden' && /needs an admin token/.test(message) && config.checkoutClient)
    return ' (inside this checkout: RC_ADMIN=1 rc admin ... uses the admin token npm start wrote)';
  // The same user on the same host, another shell (only the session differs): say how to act as that submitter.
  const owner = /^(job|hold) (\S+) belongs to (.+), not (.+); leave it alone$/.exec(message);
  if (code === 'not_job_owner' && owner) {
    const [, what, id, theirs, mine] = owner;
    const userAtHost = (s: string) => s.replace(/\/s\d+$/, '');
    if (theirs !== mine && userAtHost(theirs!) === userAtHost(mine!) && userAtHost(mine!) !== mine)
      return `. You submitted it from another shell: act as that submitter with RC_SUBMITTER='${theirs}' rc ${what === 'hold' ? 'release' : 'kill'} ${id}`;
  }
  return '';
}
