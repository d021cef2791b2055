// The standalone rc's transport (Bun): its fetch is native, where loading
// node:net costs Bun about 7 ms, a quarter of an `rc run -- true`. It gives
// what http1.ts gives the Node CLI (a status and a Body fed as data arrives),
// for http and https alike, and names a failed connection with the errno code
// the client's failover and messages know (ECONNREFUSED …).
import { Body, CONNECT_TIMEOUT, type Deadlines, deadlineError, NO_ANSWER, type Response } from './http1';

/** Bun's names for a failed connection, as errno codes. */
const CODES: Record<string, string> = {
  ConnectionRefused: 'ECONNREFUSED',
  ConnectionClosed: 'ECONNRESET',
  ECONNRESET: 'ECONNRESET',
  HostUnreachable: 'EHOSTUNREACH',
  NetworkUnreachable: 'ENETUNREACH',
  DNSResolutionFailed: 'ENOTFOUND',
  FailedToOpenSocket: 'ECONNREFUSED',
  ConnectionTimedOut: 'ETIMEDOUT',
};

/** Bun's error as the client knows errors: named by its errno code (client.ts reads `code`, then the message). */
function netError(err: unknown): Error {
  const raw = (err as { code?: unknown })?.code;
  const code = typeof raw === 'string' ? (CODES[raw] ?? raw) : err instanceof Error ? err.message : String(err);
  return Object.assign(new Error(code), { code });
}

/**
 * fetch tells no connect from the wait for an answer: the first deadline is both together (a request cut there may
 * have reached the controller, so the client moves on only where repeating it is harmless, as after NO_ANSWER).
 */
export async function fetchRequest(
  url: URL,
  method: string,
  headers: Record<string, string>,
  payload: string | Buffer | undefined,
  deadlines: Deadlines,
): Promise<Response> {
  const abort = new AbortController();
  let timedOut: Error | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const arm = (ms: number) => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = deadlineError(NO_ANSWER);
      abort.abort();
    }, ms);
  };
  const disarm = () => {
    if (timer) clearTimeout(timer);
    timer = null;
  };
  arm(deadlines.connectMs + deadlines.answerMs);
  let res: globalThis.Response;
  try {
    // A Buffer is a Uint8Array, which fetch takes (the DOM types want one over a plain ArrayBuffer).
    res = await fetch(url, { method, headers, body: payload as BodyInit | undefined, signal: abort.signal, redirect: 'manual' });
  } catch (err) {
    disarm();
    if (timedOut) throw timedOut;
    const e = netError(err);
    // Bun's own connect timeout: the request never left.
    throw (e as { code?: string }).code === 'ETIMEDOUT' ? deadlineError(CONNECT_TIMEOUT) : e;
  }
  if (deadlines.stream) disarm();
  else arm(deadlines.answerMs);
  // Once the outcome is known, the connection is dropped: nothing else is heard from it.
  const body = new Body(() => {
    disarm();
    abort.abort();
  });
  const reader = res.body?.getReader();
  if (!reader) body.end();
  else
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return body.end();
          if (!deadlines.stream) arm(deadlines.answerMs);
          body.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
        }
      } catch (err) {
        body.end(timedOut ?? netError(err));
      }
    })();
  return { statusCode: res.status, headers: Object.fromEntries(res.headers), body };
}
