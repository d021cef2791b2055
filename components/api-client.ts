// The dashboard's typed client: one call per route of the table
// (protocol/routes.ts), as the CLI's client is. The session cookie signs the
// requests in; changes go as JSON from the page's own origin, which is what
// the router's CSRF rule asks of a cookie (server/http/router.ts).
import type { ApiErrorBody } from '../core/errors';
import { type JsonRoute, type ResponseOf, type RouteArgs, type RouteInput, type RouteName, splitRoute } from '../protocol/routes';

/** An answer that is not 2xx: the controller's stable code and its sentence. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The URL of a route for its input: path parameters filled in, the query appended. */
export function routeUrl<N extends RouteName>(name: N, input?: RouteInput<N>): string {
  const { path } = splitRoute(name);
  const params = (input ?? {}) as Record<string, unknown>;
  const filled = path.replace(/:(\w+)/g, (_, k: string) => encodeURIComponent(String(params[k] ?? '')));
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries((params.query as Record<string, unknown> | undefined) ?? {}))
    if (v !== undefined && v !== null && v !== '') query.set(k, String(v));
  const q = query.toString();
  return q ? `${filled}?${q}` : filled;
}

/** Calls a JSON route; an error answer throws ApiError with its code and message. */
export async function call<N extends JsonRoute>(name: N, ...args: RouteArgs<N>): Promise<ResponseOf<N>> {
  const input = args[0] as RouteInput<N> | undefined;
  const { method } = splitRoute(name);
  const body = (input as { body?: unknown } | undefined)?.body;
  let res: Response;
  try {
    res = await fetch(routeUrl(name, input), {
      method,
      credentials: 'same-origin',
      // A change says it is JSON even without a body (a DELETE): the session cookie is taken for changes only so (no cross-site form can).
      headers: body === undefined && method === 'GET' ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'unreachable', 'the controller did not answer; it may be restarting (the page retries by itself)');
  }
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // A proxy's HTML error page, or the dashboard still building.
  }
  if (!res.ok) {
    const err = (parsed as ApiErrorBody | null)?.error;
    throw new ApiError(res.status, err?.code ?? 'http_error', err?.message ?? `the controller answered ${res.status}`);
  }
  return parsed as ResponseOf<N>;
}
