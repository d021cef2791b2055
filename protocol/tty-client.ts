// A terminal client of the controller's /tty socket as a state machine, shared
// by rc run --tty (cli/tty.ts) and the dashboard's terminal
// (components/terminal-view.tsx). It does no I/O: each method takes what
// happened (the socket connected, the controller said `started`, bytes came,
// the screen wrote them, a key was typed) and returns what to do, in order
// (send `open` with this payload, write these bytes, ack them, say the job is
// queued, end with this exit). The adapters own the socket, the screen (stdout
// in raw mode, xterm.js) and the policies that differ: how a status is shown,
// how long a dropped connection may take to come back, what a refusal does.
// Types only from the rest of protocol/ and socket.io-client: no zod, no socket.io code, no DOM, so the
// CLI's terminal bundle stays small. docs/api.md, "The terminal socket".
import type { Socket } from 'socket.io-client';
import { type TtyClientToController, type TtyControllerToClient, TtyEvent } from './events';
import type { TtySize } from './tty';
import type { TtyError, TtyExit, TtyOpenMessage, TtyQueued, TtyStarted } from './wire';

/** The fields of a new terminal's `open` (the submit fields), less the size, which is taken when it is sent. */
export type TtyNewTerminal = Omit<TtyOpenMessage, 'cols' | 'rows' | 'jobId' | 'after'>;

export interface TtyClientOptions {
  /** What a new terminal is opened with (ignored when `jobId` is given). */
  open: TtyNewTerminal;
  /** Re-attach to this terminal instead of opening one (rc attach, the dashboard's ?job=). */
  jobId?: string | null;
  /** The screen's size now: each `open` carries it. */
  size: () => TtySize;
}

/**
 * - `connecting`: no `open` sent yet (or the connection dropped before the controller answered the first one).
 * - `opening`: `open` sent (a new terminal, or a re-attach after a reconnect), no `queued` or `started` since.
 * - `queued`: the job waits for a device.
 * - `running`: `started` came; output flows.
 * - `ended`: the job's exit came, its owner took the terminal back from this client's token (`detached`), or the connection dropped
 *   before the controller said which job it queued (nothing to re-attach to). Nothing is done after it.
 */
export type TtyClientPhase = 'connecting' | 'opening' | 'queued' | 'running' | 'ended';

/** What the adapter does, in the order given. */
export type TtyClientAction =
  // ---- to send on the socket
  /** Send `open`: a new terminal, or (`reattach`) `{ jobId, after, cols, rows }` resuming after the bytes already written. */
  | { type: 'open'; message: TtyOpenMessage; reattach: boolean }
  | { type: 'input'; data: string | Uint8Array }
  | { type: 'resize'; size: TtySize }
  /** Bytes of output the screen has written: the flow control. */
  | { type: 'ack'; bytes: number }
  // ---- for the screen and the user
  /** Write these bytes of the terminal's output, then call written() with their length. */
  | { type: 'write'; bytes: Uint8Array }
  /** The job is queued; `first`: the first news of it (not on a re-attach, nor again after a reconnect). */
  | { type: 'queued'; jobId: string; position: number | null; first: boolean }
  /** The terminal runs; `first`: the first `started` (a re-attach after a reconnect gets another). */
  | { type: 'started'; jobId: string; host: string; devices: string[]; offset: number; first: boolean }
  /** The job ended: the last event. The output before it has all come. */
  | { type: 'exit'; exit: TtyExit }
  /** The terminal's owner took it back from this client's token (server/tty-viewers.ts): the end here, without re-attaching. */
  | { type: 'detached'; message: string }
  /** The controller refused or failed the `open` (bad_request, not_found, not_job_owner, terminal_busy, a submit error, internal). */
  | { type: 'refused'; code: string; message: string }
  /** The connection dropped; socket.io reconnects, and connected() then re-attaches to `jobId`. */
  | { type: 'lost'; jobId: string | null }
  /** The connection dropped before the controller said which job it queued: there is nothing to re-attach to. */
  | { type: 'stranded' }
  /** A connection attempt failed; `everConnected`: an earlier one had worked (this is a reconnect). */
  | { type: 'unreachable'; message: string; everConnected: boolean };

/** The one thing both adapters' sockets need: emitting the client's messages. */
interface TtySocket {
  emit<E extends keyof TtyClientToController>(event: E, ...args: Parameters<TtyClientToController[E]>): unknown;
}

/** Sends an action that is a socket message (open, input, resize, ack) and says so; the others are the adapter's to carry out. */
export function sendOnSocket(socket: TtySocket, a: TtyClientAction): boolean {
  switch (a.type) {
    case 'open':
      socket.emit(TtyEvent.open, a.message);
      return true;
    case 'input':
      socket.emit(TtyEvent.input, a.data);
      return true;
    case 'resize':
      socket.emit(TtyEvent.resize, a.size);
      return true;
    case 'ack':
      socket.emit(TtyEvent.ack, a.bytes);
      return true;
    default:
      return false;
  }
}

/**
 * Feeds every event of the socket to the client and what it answers to
 * `act`: both adapters listen the same way. `connected` runs first on each
 * connection (the CLI stops its give-up timer there); a `disconnected` that
 * returns false keeps the client from hearing of it (the CLI's own close).
 */
export function listenOnSocket(
  socket: Socket<TtyControllerToClient, TtyClientToController>,
  client: TtyClient,
  act: (actions: TtyClientAction[]) => void,
  hooks: { connected?: () => void; disconnected?: () => boolean } = {},
): void {
  socket.on('connect', () => {
    hooks.connected?.();
    act(client.connected());
  });
  socket.on('connect_error', (err: Error) => act(client.connectFailed(err.message)));
  socket.on('disconnect', () => {
    if (hooks.disconnected?.() !== false) act(client.disconnected());
  });
  socket.on(TtyEvent.queued, (e) => act(client.queued(e)));
  socket.on(TtyEvent.started, (e) => act(client.started(e)));
  socket.on(TtyEvent.output, (data) => act(client.output(data)));
  socket.on(TtyEvent.exit, (e) => act(client.exit(e)));
  socket.on(TtyEvent.error, (e) => act(client.error(e)));
}

export class TtyClient {
  private id: string | null;
  private bytes = 0;
  private state: TtyClientPhase = 'connecting';
  private openSent = false;
  private hasStarted = false;
  private wasConnected = false;

  constructor(private readonly o: TtyClientOptions) {
    this.id = o.jobId ?? null;
  }

  /** The terminal's job, once known (given, or from `queued`/`started`). */
  get jobId(): string | null {
    return this.id;
  }
  /** Where in the terminal's output the screen is: `started.offset` plus the output since. A re-attach resumes here. */
  get received(): number {
    return this.bytes;
  }
  get phase(): TtyClientPhase {
    return this.state;
  }
  /** Whether the terminal has ever started here (it stays true over a reconnect). */
  get everStarted(): boolean {
    return this.hasStarted;
  }
  get ended(): boolean {
    return this.state === 'ended';
  }

  /** The socket connected, the first time or again: open the terminal, or re-attach to it after the bytes already written. */
  connected(): TtyClientAction[] {
    if (this.ended) return [];
    this.wasConnected = true;
    if (this.id !== null) {
      this.state = 'opening';
      return [{ type: 'open', message: { jobId: this.id, after: this.bytes, ...this.o.size() }, reattach: true }];
    }
    if (!this.openSent) {
      this.openSent = true;
      this.state = 'opening';
      return [{ type: 'open', message: { ...this.o.open, ...this.o.size() }, reattach: false }];
    }
    this.state = 'ended';
    return [{ type: 'stranded' }];
  }

  /** A connection attempt failed (socket.io's connect_error). */
  connectFailed(message: string): TtyClientAction[] {
    if (this.ended) return [];
    return [{ type: 'unreachable', message, everConnected: this.wasConnected }];
  }

  disconnected(): TtyClientAction[] {
    if (this.ended) return [];
    return [{ type: 'lost', jobId: this.id }];
  }

  queued(e: TtyQueued): TtyClientAction[] {
    if (this.ended) return [];
    const first = this.id === null;
    this.id = e.jobId;
    this.state = 'queued';
    return [{ type: 'queued', jobId: e.jobId, position: e.position, first }];
  }

  /** The output that follows starts at byte `offset`: `received` is set to it (a replay may repeat or skip bytes). */
  started(e: TtyStarted): TtyClientAction[] {
    if (this.ended) return [];
    const first = !this.hasStarted;
    this.id = e.jobId;
    this.bytes = e.offset;
    this.hasStarted = true;
    this.state = 'running';
    return [{ type: 'started', jobId: e.jobId, host: e.host, devices: e.devices, offset: e.offset, first }];
  }

  /** Output (a Buffer in Node, an ArrayBuffer in a browser): counted now, written by the adapter, acked by written(). */
  output(data: Uint8Array | ArrayBuffer): TtyClientAction[] {
    if (this.ended) return [];
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : data;
    this.bytes += bytes.length;
    return [{ type: 'write', bytes }];
  }

  /** The screen has written `bytes` of output: acknowledge them, so a slow screen holds the program back, not memory. */
  written(bytes: number): TtyClientAction[] {
    return [{ type: 'ack', bytes }];
  }

  exit(e: TtyExit): TtyClientAction[] {
    if (this.ended) return [];
    this.state = 'ended';
    return [{ type: 'exit', exit: e }];
  }

  error(e: TtyError): TtyClientAction[] {
    if (this.ended) return [];
    if (e.code === 'detached') {
      this.state = 'ended';
      return [{ type: 'detached', message: e.message }];
    }
    return [{ type: 'refused', code: e.code, message: e.message }];
  }

  /** Keys: sent once the terminal has started, until it ends; dropped before (the controller would drop them too). */
  input(data: string | Uint8Array): TtyClientAction[] {
    if (!this.hasStarted || this.ended) return [];
    return [{ type: 'input', data }];
  }

  /** The screen changed size: sent until the end (a queued terminal starts with the last size the controller heard). */
  resize(size: TtySize): TtyClientAction[] {
    if (this.ended) return [];
    return [{ type: 'resize', size }];
  }
}
