// Requests that are not for rc at all, answered at the door with the usual
// error body rather than left to the router or Next (which answers a target
// that is not a path with a 500 or a redirect, and logs a stack trace): a
// request target that is not a path, a request Node's parser refuses, and
// CONNECT.
import type { Duplex } from 'node:stream';
import { type ErrorCode, RcError } from '../../core/errors';

/**
 * Why a request target is not one rc serves, or null for a path. rc takes
 * the origin form only (`/api/jobs?state=queued`): not a URL with a scheme
 * and host (the absolute form, meant for a proxy), `*`, an authority, a path
 * that starts with `//` or holds a `\` (URL parsers read both as naming a
 * host), nor one with a malformed %-escape (every page and route decodes its
 * path).
 */
export function targetProblem(target: string | undefined): string | null {
  const t = target ?? '';
  const shown = JSON.stringify(t.length > 100 ? `${t.slice(0, 100)}…` : t);
  if (!t.startsWith('/')) return `the request target ${shown} is not a path: send the path alone (GET /api/whoami), as to a server, not a proxy`;
  if (t.startsWith('//')) return `the request target ${shown} starts with //: a path starts with a single /`;
  const path = t.split(/[?#]/, 1)[0]!;
  // URL parsers read a \ as a /: /\host would name a host.
  if (path.includes('\\')) return `the path ${shown} holds a \\: escape it as %5C`;
  try {
    decodeURIComponent(path);
  } catch {
    return `the path ${shown} has a malformed %-escape (a % must start an escape of UTF-8 bytes: %2F, %C3%A9)`;
  }
  return null;
}

/**
 * The server's 'clientError': a request Node's HTTP parser refused (an
 * authority as the target, a malformed header) gets a 400 with the error
 * body, as Node would answer it but for the body; too-large headers and a
 * request too slow to arrive keep their status (431, 408).
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // The client left, or an answer is already part way out: nothing more can be said.
  const answering = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (err.code === 'ECONNRESET' || !socket.writable || answering) {
    socket.destroy();
    return;
  }
  endWith(
    socket,
    err.code === 'HPE_HEADER_OVERFLOW'
      ? rawAnswer(431, 'Request Header Fields Too Large', 'bad_request', 'the request headers are too large')
      : err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
        ? rawAnswer(413, 'Payload Too Large', 'payload_too_large', 'the chunk extensions of the body are too large')
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? rawAnswer(408, 'Request Timeout', 'bad_request', 'the request did not arrive in time')
          : rawAnswer(
              400,
              'Bad Request',
              'bad_request',
              `the request is not valid HTTP/1.1 (${err.code ?? 'unparsable'}); a request target is a path, as in GET /api/whoami`,
            ),
  );
}

/** The server's 'connect': rc is not a proxy, so a CONNECT gets 405 and the connection ends. */
export function answerConnect(socket: Duplex): void {
  endWith(socket, rawAnswer(405, 'Method Not Allowed', 'method_not_allowed', 'CONNECT is not supported: rc is not a proxy'));
}

/** How long a connection answered here may stay half open for the client to read the answer and close its side. */
const CLOSE_AFTER_MS = 5000;

function endWith(socket: Duplex, answer: string): void {
  socket.on('error', () => {});
  socket.end(answer);
  const timer = setTimeout(() => socket.destroy(), CLOSE_AFTER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/** A whole HTTP/1.1 answer with the error body, for a socket no ServerResponse owns. */
function rawAnswer(status: number, reason: string, code: ErrorCode, message: string): string {
  const body = JSON.stringify(new RcError(code, message).toBody());
  return (
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `cache-control: no-store\r\nconnection: close\r\n\r\n${body}`
  );
}
