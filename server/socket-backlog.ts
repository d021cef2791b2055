// What the controller holds for a socket.io client (a terminal, the
// dashboard) that stops reading: engine.io keeps the packets its transport
// cannot take yet, and the websocket the bytes the kernel has not taken.
// Neither has a bound of its own, and a terminal client's acknowledgements are
// its word only (one that acknowledges without reading is never paused). Past
// SOCKET_BACKLOG_BYTES the connection is cut; the client reconnects, and a
// terminal resumes from its replay buffer.
import type { Socket } from 'socket.io';

/** Bytes queued for one client connection past which it is cut. Far above a terminal's HIGH_WATER, so flow control acts first. */
export const SOCKET_BACKLOG_BYTES = 8 * 1024 * 1024;

/** The parts of engine.io's connection this needs (its writeBuffer is private, its events are not typed). */
interface Conn {
  on(event: 'packetCreate', fn: (packet: { data?: unknown }) => void): void;
  on(event: 'flush', fn: (packets: { data?: unknown }[]) => void): void;
  close(discard?: boolean): void;
  transport: { name: string; socket?: { bufferedAmount: number; terminate(): void } };
}

/** Connections already bounded: a client's namespaces (the root and /tty) may share one. */
const bounded = new WeakSet<object>();

/** Watches a client's connection and cuts it when more than SOCKET_BACKLOG_BYTES wait for it as more is sent. */
export function boundBacklog(socket: Socket, log: (msg: string) => void): void {
  const conn = socket.conn as unknown as Conn;
  if (bounded.has(conn)) return;
  bounded.add(conn);
  // Bytes of the packets engine.io holds: counted in when made, out when handed to the transport.
  let held = 0;
  let cut = false;
  conn.on('packetCreate', (packet) => {
    // Judged on what already waits: one large packet (a terminal's replay) to a client that keeps up is fine.
    const waiting = held + websocketBytes(conn);
    held += packetBytes(packet.data);
    if (cut || waiting <= SOCKET_BACKLOG_BYTES) return;
    cut = true;
    log(`cut a client of ${socket.nsp.name}: over ${SOCKET_BACKLOG_BYTES / 1024 / 1024} MiB waited for it to read`);
    cutNow(conn);
  });
  conn.on('flush', (packets) => {
    for (const p of packets) held -= packetBytes(p.data);
  });
}

/** What the websocket has not handed to the kernel yet. */
function websocketBytes(conn: Conn): number {
  return conn.transport.name === 'websocket' ? (conn.transport.socket?.bufferedAmount ?? 0) : 0;
}

/** A close handshake would wait behind what the client is not reading: the websocket is destroyed instead. */
function cutNow(conn: Conn): void {
  const ws = conn.transport.name === 'websocket' ? conn.transport.socket : undefined;
  if (ws) ws.terminate();
  else conn.close(true);
}

function packetBytes(data: unknown): number {
  if (typeof data === 'string') return data.length;
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return data.byteLength;
  return 0;
}
