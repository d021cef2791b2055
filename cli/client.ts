// The typed API client every command uses: plain node:http, no dependencies,
// so the CLI starts fast. Errors come back as `rc: <code>: <sentence>`.
import type { IncomingMessage } from 'node:http';
import { EXIT, exitCodeForError } from '../core/exit-codes';
import type { CliConfig } from './config';
import { fail } from './output';

export interface ApiError { error: { code: string; message: string } }

export class Client {
  constructor(private readonly config: CliConfig) {}

  get submitter(): string {
    return this.config.submitter;
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.send(method, path, body, 'application/json');
    const text = await readAll(res);
    const parsed = parseJson(text);
    if ((res.statusCode ?? 500) >= 400) failFromBody(res.statusCode ?? 500, parsed);
    return parsed as T;
  }

  /** Sends a request whose answer is a frame stream; a non-200 answer is turned into a CLI error. */
  async stream(method: string, path: string, body: unknown, accept: string): Promise<IncomingMessage> {
    const res = await this.send(method, path, body, accept);
    if (res.statusCode !== 200) failFromBody(res.statusCode ?? 500, parseJson(await readAll(res)));
    return res;
  }

  private send(method: string, path: string, body: unknown, accept: string): Promise<IncomingMessage> {
    const url = new URL(this.config.controller + path);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    // Loaded on first use: each of these costs milliseconds at start-up, and https pulls in TLS.
    const { request } = (url.protocol === 'https:' ? require('node:https') : require('node:http')) as typeof import('node:http');
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(url, {
        method,
        headers: {
          authorization: `Bearer ${this.config.token}`,
          accept,
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
      }, resolve);
      req.on('error', (err: NodeJS.ErrnoException) => {
        reject(new Error(err.code ?? err.message));
      });
      req.end(payload);
    }).catch((err: Error) => fail('unreachable', `cannot reach the controller at ${this.config.controller} (${err.message}); is it running? Check RC_CONTROLLER`, EXIT.unreachable));
  }
}

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function failFromBody(status: number, body: unknown): never {
  const err = (body as ApiError | null)?.error;
  if (err && typeof err.code === 'string') fail(err.code, err.message, exitCodeForError(err.code));
  fail('error', `the controller answered HTTP ${status}`, EXIT.error);
}
