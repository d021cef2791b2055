// rc cp's file steps for a worker connected to another controller. A step
// is a request and a reply with up to a megabyte in it, too big for a bus
// message: the asking controller writes the request in a worker_calls row and
// tells the bus its id; the controller holding the worker reads it, asks the
// worker, writes the reply in the row and tells the bus; the asker reads the
// reply and deletes the row. No reply within the timeout: null, as for a
// worker here that does not answer.
import { randomUUID } from 'node:crypto';
import type { FileEvent } from '../protocol/events';
import type { FileOp, FileReply } from '../protocol/worker';
import type { Sql } from './db';

export interface RemoteCallDeps {
  sql: Sql;
  /** Tells the bus: a call for `host`'s worker is waiting, or a reply is. */
  publish: (m: { t: 'call'; id: string; host: string } | { t: 'reply'; id: string }) => void;
  /** Asks a worker connected here (null: it is not, or did not answer). */
  local: (host: string, event: FileEvent, op: FileOp, timeoutMs: number) => Promise<FileReply | null>;
  log: (msg: string) => void;
}

interface CallRow {
  host: string;
  event: FileEvent;
  op: Omit<FileOp, 'data'>;
  opData: Buffer | null;
  reply: Omit<Extract<FileReply, { ok: true }>, 'data'> | Extract<FileReply, { ok: false }> | null;
  replyData: Buffer | null;
}

export class RemoteCalls {
  private readonly waiting = new Map<string, () => void>();

  constructor(private readonly deps: RemoteCallDeps) {}

  /** Asks `host`'s worker, connected to another controller, through the database. */
  async call(host: string, event: FileEvent, op: FileOp, timeoutMs: number): Promise<FileReply | null> {
    const id = randomUUID();
    const { data, ...rest } = op;
    const answered = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(false);
      }, timeoutMs);
      this.waiting.set(id, () => {
        clearTimeout(timer);
        this.waiting.delete(id);
        resolve(true);
      });
    });
    await this.deps
      .sql`insert into worker_calls (id, host, event, op, op_data) values (${id}, ${host}, ${event}, ${JSON.stringify(rest)}::text::jsonb, ${data ?? null})`;
    this.deps.publish({ t: 'call', id, host });
    const ok = await answered;
    const [row] = await this.deps.sql<CallRow[]>`delete from worker_calls where id = ${id} returning *`;
    if (!ok || !row?.reply) return null;
    return row.reply.ok ? { ...row.reply, ...(row.replyData ? { data: row.replyData } : {}) } : row.reply;
  }

  /** A call for a worker, from the bus: answered if the worker is connected here. */
  async serve(id: string, host: string, holds: (host: string) => boolean): Promise<void> {
    if (!holds(host)) return;
    const [row] = await this.deps.sql<CallRow[]>`select * from worker_calls where id = ${id} and reply is null`;
    if (!row) return;
    const op: FileOp = { ...row.op, ...(row.opData ? { data: row.opData } : {}) };
    const reply = await this.deps.local(host, row.event, op, 30_000);
    if (!reply) return;
    const { data, ...rest } = reply as Extract<FileReply, { ok: true }>;
    await this.deps.sql`update worker_calls set reply = ${JSON.stringify(rest)}::text::jsonb, reply_data = ${data ?? null} where id = ${id}`;
    this.deps.publish({ t: 'reply', id });
  }

  /** A reply from the bus: the call waiting for it here reads it. */
  replied(id: string): void {
    this.waiting.get(id)?.();
  }

  /** Rows of calls whose askers went away (a controller that died mid-call). */
  async prune(): Promise<void> {
    await this.deps.sql`delete from worker_calls where created_at < now() - interval '5 minutes'`;
  }
}
