// RC_CONTROLLER may list several controllers (comma-separated) that share one
// database: a socket (the worker's, rc run --tty's) connects to one, and when
// it loses it and cannot get it back, it tries the next, round the list. Any
// of them serves it alike. Type imports only: no socket.io in the CLI bundle.
import type { Socket } from 'socket.io-client';

/** The list in RC_CONTROLLER: trimmed, without trailing slashes. */
export function controllerList(value: string): string[] {
  return value
    .split(',')
    .map((u) => u.trim().replace(/\/+$/, ''))
    .filter(Boolean);
}

/** Failed attempts on one controller before the next is tried: a restart of the same one gets a moment. */
const ATTEMPTS_EACH = 2;

/**
 * Moves the socket's reconnection attempts round the list. socket.io's manager
 * dials the address it was made with on each attempt; the next one is put in
 * its place (the manager's `uri`, read at every attempt), so the socket, its
 * handlers and its buffered state stay the same.
 */
export function rotateControllers(
  socket: Socket,
  urls: string[],
  namespace: string,
  onMove: (url: string) => void,
  first = 0,
): { current: () => string; next: () => void } {
  let at = first;
  let failed = 0;
  const manager = socket.io as unknown as { uri: string; on(event: string, fn: () => void): void };
  const move = () => {
    at = (at + 1) % urls.length;
    manager.uri = urls[at]! + namespace;
    onMove(urls[at]!);
  };
  socket.on('connect', () => {
    failed = 0;
  });
  manager.on('reconnect_attempt', () => {
    if (urls.length < 2 || ++failed <= ATTEMPTS_EACH) return;
    failed = 1;
    move();
  });
  return {
    current: () => urls[at]!,
    /** The one in use stopped answering: the next connection goes to the next of the list (the same, when it is alone). */
    next: () => {
      if (urls.length < 2) return;
      failed = 0;
      move();
    },
  };
}
