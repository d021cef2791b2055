// The standalone rc's transport (Bun): its fetch is native, where loading
// node:net costs Bun about 7 ms, a quarter of an `rc run -- true`. It gives
// what http1.ts gives the Node CLI (a status and a Body fed as data arrives),
// for http and https alike, and names a failed connection with the errno code
// the client's failover and messages know (ECONNREFUSED …).
import { Body } from './http1';
import type { Response } from './client';

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

const codeOf = (err: unknown): string => {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' ? (CODES[code] ?? code) : err instanceof Error ? err.message : String(err);
};

export async function fetchRequest(url: URL, method: string, headers: Record<string, string>, payload?: string | Buffer): Promise<Response> {
  const abort = new AbortController();
  let res: globalThis.Response;
  try {
    // A Buffer is a Uint8Array, which fetch takes (the DOM types want one over a plain ArrayBuffer).
    res = await fetch(url, { method, headers, body: payload as BodyInit | undefined, signal: abort.signal, redirect: 'manual' });
  } catch (err) {
    throw Object.assign(new Error(codeOf(err)), { code: codeOf(err) });
  }
  // Once the outcome is known, the connection is dropped: nothing else is heard from it.
  const body = new Body(() => abort.abort());
  const reader = res.body?.getReader();
  if (!reader) body.end();
  else
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return body.end();
          body.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
        }
      } catch (err) {
        body.end(Object.assign(new Error(codeOf(err)), { code: codeOf(err) }));
      }
    })();
  return { statusCode: res.status, body };
}
