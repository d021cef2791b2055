// How an MCP tool does what it does: the same API request the CLI would make,
// sent to this controller with the caller's own token (issue 35). Every rule a
// route holds (who may, the submitter a token may claim, the limits, the
// validation, the audit) is then the route's, written once: MCP adds none and
// skips none. The `x-rc-mcp` header (this process's secret, and the agent's
// address) makes the audit log say `via mcp` and name the agent's address.
import { RcError, isErrorCode } from '../../core/errors';
import { STREAM_CONTENT_TYPE } from '../../core/frames';
import type { JsonRoute, ResponseOf, RouteArgs, RouteName } from '../../protocol/routes';
import { splitRoute } from '../../protocol/routes';

/** The header a loopback request carries: `<nonce> <agent's address>`. */
export const MCP_HEADER = 'x-rc-mcp';

export class Loopback {
  constructor(
    /** This controller, as it reaches itself (server.ts: where it listens). */
    private readonly base: string,
    private readonly token: string,
    /** MCP_HEADER's value. */
    private readonly via: string,
  ) {}

  /** A JSON route's answer; an error answer is thrown as the RcError it carries (its code and sentence). */
  async call<N extends JsonRoute>(name: N, ...[input]: RouteArgs<N>): Promise<ResponseOf<N>> {
    const res = await this.send(name, input ?? {}, 'application/json');
    const text = await res.text();
    if (!res.ok) throw errorOf(res.status, text);
    return JSON.parse(text) as ResponseOf<N>;
  }

  /** Raw bytes down (rc cp's download), at most what the route sends. */
  async bytes(name: RouteName, input: Record<string, unknown>): Promise<Buffer> {
    const res = await this.send(name, input, 'application/octet-stream');
    const data = Buffer.from(await res.arrayBuffer());
    if (!res.ok) throw errorOf(res.status, data.toString('utf8'));
    return data;
  }

  /** A frame stream (GET /api/jobs/:id/stream, as rc logs reads it); `signal` leaves it early. */
  async stream(name: RouteName, input: Record<string, unknown>, signal: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    const res = await this.send(name, input, STREAM_CONTENT_TYPE, signal);
    if (!res.ok || !res.body) throw errorOf(res.status, await res.text());
    return res.body;
  }

  private send(name: RouteName, input: Record<string, unknown>, accept: string, signal?: AbortSignal): Promise<Response> {
    const { method, path } = splitRoute(name);
    const { query, body, ...params } = input as { query?: Record<string, string | undefined>; body?: unknown } & Record<string, string>;
    const filled = path.replace(/:([A-Za-z]+)/g, (_, k: string) => encodeURIComponent(String(params[k] ?? '')));
    const q = new URLSearchParams(Object.entries(query ?? {}).filter((e): e is [string, string] => e[1] !== undefined));
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept, [MCP_HEADER]: this.via };
    const raw = body instanceof Uint8Array;
    if (body !== undefined) headers['content-type'] = raw ? 'application/octet-stream' : 'application/json';
    return fetch(`${this.base}${filled}${q.size ? `?${q}` : ''}`, {
      method,
      headers,
      signal,
      body: body === undefined ? undefined : raw ? new Blob([body as Uint8Array<ArrayBuffer>]) : JSON.stringify(body),
    });
  }
}

/** The route's error answer as an RcError (its code and sentence); an answer that is not one is `internal`. */
function errorOf(status: number, text: string): RcError {
  try {
    const e = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
    if (e?.code && isErrorCode(e.code) && e.message) return new RcError(e.code, e.message);
  } catch {}
  return new RcError('internal', `the controller answered ${status} without saying why`);
}
