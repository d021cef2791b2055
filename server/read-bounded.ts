// A request body read whole, but never more than a bound: refused by its
// Content-Length, or as soon as it passes the bound.
import type { IncomingMessage } from 'node:http';
import type { RcError } from '../core/errors';

/** A raw request body of at most `max` bytes: refused by its Content-Length, or as soon as it passes the bound (`tooBig`). */
export function readBounded(req: IncomingMessage, max: number, tooBig: () => RcError): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? 0) > max) return Promise.reject(tooBig());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.destroy();
        reject(tooBig());
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
