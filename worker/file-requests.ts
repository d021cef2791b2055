// rc cp's file requests from the controller, one step each (read a piece;
// begin, write, commit or abort an upload) in the worker's workspace
// (files.ts), each answered with a FileReply.
import type { Socket } from 'socket.io-client';
import { type ControllerToWorker, WorkerEvent, type WorkerToController } from '../protocol/events';
import { FileOp, type FileReply } from '../protocol/worker';
import { zodMessage } from '../protocol/zod-message';
import { abortWrite, beginWrite, commitWrite, FileError, readPiece, writePiece } from './files';

export function answerFileRequests(socket: Socket<ControllerToWorker, WorkerToController>, workspace: string): void {
  socket.on(WorkerEvent.fileRead, (raw, ack) => fileStep(raw, ack, (op) => readPiece(workspace, op.path, op.offset ?? 0, op.length ?? 0)));
  socket.on(WorkerEvent.fileBegin, (raw, ack) => fileStep(raw, ack, (op) => ({ temp: beginWrite(workspace, op.path) })));
  socket.on(WorkerEvent.fileWrite, (raw, ack) =>
    fileStep(raw, ack, (op) => writePiece(workspace, op.path, op.temp ?? '', op.offset ?? 0, op.data ?? Buffer.alloc(0))),
  );
  socket.on(WorkerEvent.fileCommit, (raw, ack) => fileStep(raw, ack, (op) => commitWrite(workspace, op.path, op.temp ?? '', op.size ?? -1)));
  socket.on(WorkerEvent.fileAbort, (raw, ack) => fileStep(raw, ack, (op) => abortWrite(workspace, op.path, op.temp ?? '')));
}

/** Runs one rc cp step and answers with a FileReply; refusals carry a code and a sentence, never a stack. */
// biome-ignore lint/suspicious/noConfusingVoidType: a step answers with what it read, or nothing (a write).
function fileStep(raw: unknown, ack: unknown, fn: (op: FileOp) => object | void): void {
  if (typeof ack !== 'function') return;
  const op = FileOp.safeParse(raw);
  let reply: FileReply;
  if (!op.success) reply = { ok: false, code: 'bad_request', message: `bad file request: ${zodMessage(op.error)}` };
  else {
    try {
      reply = { ok: true, ...(fn(op.data) ?? {}) };
    } catch (err) {
      reply =
        err instanceof FileError
          ? { ok: false, code: err.code, message: err.message }
          : { ok: false, code: 'internal', message: `${(err as NodeJS.ErrnoException).code ?? 'error'}: ${(err as Error).message}` };
    }
  }
  (ack as (r: FileReply) => void)(reply);
}
