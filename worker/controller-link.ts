// The worker's connection to the controller: it dials out (no inbound port),
// says hello with its inventory and the jobs it holds, and once the
// controller has the hello sends what it held back meanwhile (the latest
// inventory, device reports) and starts its heartbeat. It reconnects after
// any disconnect, a controller shutting down included, until the worker stops;
// with several controllers in RC_CONTROLLER, to the next one when the one it
// lost does not come back (controllers.ts). A controller that keeps the
// connection open but stops answering (frozen: SIGSTOP, a paused VM) is left
// too: a heartbeat it does not acknowledge in time sends the worker to the
// next one at once, well within the host timeout, so the other controllers
// never see the host fall silent (server/reaper.ts).
//
// Each worker process sends an id of its own: a controller refuses a second
// process with the same credential while the first is connected and heard
// from (host_connected, server/worker-claim.ts). Refused, the worker tries once
// more after the wait the refusal names (a first worker that just died may not
// have been noticed yet), and stops when the host is still held then: two
// processes sharing one credential is a mistake a person must sort out, and a
// worker that waited on would take the host over, from wherever it runs, as
// soon as the first stops.
import { randomUUID } from 'node:crypto';
import { io, type Socket } from 'socket.io-client';
import { type ControllerToWorker, type HelloReply, WORKER_NAMESPACE, WorkerEvent, type WorkerToController } from '../protocol/events';
import type { Heartbeat, Inventory, Quarantine } from '../protocol/worker';
import type { WorkerConfig } from './config';
import type { Prober } from './inventory';
import type { Unkillable } from './runtime';
import { controllerList, rotateControllers } from '../protocol/controllers';

declare const RC_VERSION: string;

export interface LinkHooks {
  /** The jobs the worker holds (running, or ended and not yet reported), and the unkillable processes of the previous run's. */
  hello(): { running: { jobId: string; fence: number }[]; unkillable: Unkillable[] };
  /** The controller has our hello: what it does not have yet is sent again. */
  welcomed(reply: HelloReply): void;
  /** The connection is lost. */
  lost(): void;
  /** Every heartbeat interval while connected. */
  beat(): void;
  /** The controller says this host was removed (rc admin host rm): the worker stops for good. */
  removed(message: string): void;
  /** Another worker process holds this host, still after a second try: this one stops. */
  refused(message: string): void;
}

/** The wait a host_connected refusal names, in seconds (bounded; 15 when it names none). */
function retryAfterS(data: unknown): number {
  const s = (data as { retryAfterS?: unknown } | undefined)?.retryAfterS;
  return typeof s === 'number' && Number.isFinite(s) ? Math.min(Math.max(s, 1), 3600) : 15;
}

export class ControllerLink {
  readonly socket: Socket<ControllerToWorker, WorkerToController>;
  /** The controller has our hello: events may be sent. */
  ready = false;
  private stopping = false;
  private heartbeat: NodeJS.Timeout | null = null;
  /** Device reports held while not connected, sent in order once the controller has our hello. */
  private held: Quarantine[] = [];
  /** The inventory the controller last got from us. */
  private sent: Inventory | null = null;
  private readonly controller: { current: () => string; next: () => void };
  /** How long a heartbeat may go unacknowledged (the hello's reply says; 0: this controller acknowledges none). */
  private ackMs = 0;
  /** Counts connections: an acknowledgement's timeout from an earlier one is not this one's fault. */
  private connection = 0;
  /** This process, as the controllers tell it apart from another worker with the same credential. */
  private readonly instance = randomUUID();
  /** Refused once as host_connected since the last connection: the next refusal stops the worker. */
  private refusedOnce = false;

  constructor(
    private readonly config: WorkerConfig,
    private readonly prober: Prober,
    private readonly hooks: LinkHooks,
    private readonly log: (msg: string) => void,
  ) {
    const urls = controllerList(config.RC_CONTROLLER);
    this.socket = io(urls[0]! + WORKER_NAMESPACE, {
      auth: { token: config.RC_HOST_TOKEN, instance: this.instance },
      transports: ['websocket'],
      reconnectionDelay: 200,
      reconnectionDelayMax: 2000,
    });
    this.socket.on('connect', () => {
      this.connection += 1;
      this.refusedOnce = false;
      void this.hello();
    });
    this.socket.on('disconnect', (reason) => {
      this.connection += 1;
      this.ready = false;
      this.hooks.lost();
      this.stopHeartbeat();
      // socket.io does not retry after a server-side disconnect (a controller shutting down): we do.
      if (reason === 'io server disconnect' && !this.stopping) setTimeout(() => this.socket.connect(), 500);
    });
    this.controller = rotateControllers(this.socket as unknown as Socket, urls, WORKER_NAMESPACE, (url) => log(`trying the next controller, ${url}`));
    this.socket.on('connect_error', (err) => {
      if (err.message.startsWith('host_removed:')) {
        // Not a fault to retry: the credential is revoked for good.
        this.stopReconnecting();
        this.socket.disconnect();
        this.hooks.removed(err.message);
        return;
      }
      if (err.message.startsWith('host_connected:')) return this.heldByAnother(err.message, retryAfterS((err as { data?: unknown }).data));
      log(`cannot reach the controller at ${this.controller.current()}: ${err.message}; retrying`);
    });
  }

  /** Another worker process holds the host: one more try after `waitS`, then the worker stops. */
  private heldByAnother(message: string, waitS: number): void {
    if (this.stopping) return;
    if (this.refusedOnce) {
      this.stopReconnecting();
      this.hooks.refused(`${message}; still connected: stopping (two workers must not share one host credential)`);
      return;
    }
    this.refusedOnce = true;
    this.log(`${message}; trying once more in ${waitS} s, and stopping if the host is still connected then`);
    setTimeout(
      () => {
        if (!this.stopping) this.socket.connect();
      },
      waitS * 1000 + 1000,
    );
  }

  sendInventory(inventory: Inventory): void {
    this.sent = inventory;
    this.socket.emit(WorkerEvent.inventory, inventory);
  }

  private async hello(): Promise<void> {
    const inventory = this.prober.latest ?? (await this.prober.run());
    const { running, unkillable } = this.hooks.hello();
    // Processes of the previous run's jobs that would not die: the controller quarantines their devices (an ended job's went in its exit).
    const reply = await this.socket
      .timeout(10_000)
      .emitWithAck(WorkerEvent.hello, { version: RC_VERSION, ...inventory, running, ...(unkillable.length ? { unkillable } : {}) })
      .catch(() => null);
    if (!reply?.ok) {
      this.log(`the controller refused our hello (${reply?.code ?? 'no answer'}); reconnecting`);
      this.socket.disconnect().connect();
      return;
    }
    this.log(`connected to ${this.controller.current()} as ${this.config.RC_HOST_NAME} with ${inventory.devices.length} device(s)`);
    this.ready = true;
    this.sent = inventory;
    // A probe run that ended while the hello was on its way.
    if (this.prober.latest && this.prober.latest !== this.sent) this.sendInventory(this.prober.latest);
    const held = this.held;
    this.held = [];
    for (const q of held) this.socket.emit(WorkerEvent.deviceUnhealthy, q);
    this.hooks.welcomed(reply);
    this.ackMs = reply.heartbeatAckMs ?? 0;
    this.stopHeartbeat();
    this.heartbeat = setInterval(() => this.hooks.beat(), reply.heartbeatMs ?? 5000);
  }

  /** A heartbeat; one the controller does not acknowledge in time sends the worker to the next controller. */
  sendHeartbeat(beat: Heartbeat): void {
    const wait = this.ackMs;
    if (!wait) {
      this.socket.emit(WorkerEvent.heartbeat, beat);
      return;
    }
    const connection = this.connection;
    this.socket
      .timeout(wait)
      .emitWithAck(WorkerEvent.heartbeat, beat)
      .catch(() => {
        if (connection !== this.connection || !this.ready || this.stopping) return;
        this.leave(`no answer to a heartbeat in ${wait} ms`);
      });
  }

  /** The controller keeps the connection but does not answer: the next one is tried now, not after the ping timeout. */
  private leave(why: string): void {
    const from = this.controller.current();
    this.controller.next();
    this.log(`the controller at ${from} stopped answering (${why}); connecting to ${this.controller.current()}`);
    this.socket.disconnect();
    this.socket.connect();
  }

  /** A device must not be scheduled: told now, or once the controller has our hello. */
  sendUnhealthy(q: Quarantine): void {
    if (this.ready) this.socket.emit(WorkerEvent.deviceUnhealthy, q);
    else this.held.push(q);
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  /** The worker is stopping: no reconnect after a disconnect from here on. */
  stopReconnecting(): void {
    this.stopping = true;
  }

  close(): void {
    this.stopHeartbeat();
    this.socket.disconnect();
  }
}
