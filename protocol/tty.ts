// Interactive terminals (rc run --tty, the dashboard's terminal): the schemas
// of the socket.io namespace /tty between a client and the controller, and of
// the tty messages between the controller and a worker on the /worker socket.
// Their names and event maps are in protocol/events.ts. docs/api.md, "The
// terminal socket", documents both.
import { z } from 'zod';
import { checkJobOptions, checkPlacement, JOB_OPTIONS, JOB_PLACEMENT, Submitter } from './api';

const size = { cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(1000) };
export const TtySize = z.object(size).strict();
export type TtySize = z.infer<typeof TtySize>;

/**
 * Client → controller `open`: either a new terminal (the submit fields of
 * POST /api/jobs, less `kind`) or `jobId` to re-attach to a running one.
 * `after`: bytes of the session's output the client already has (re-attach);
 * the controller replays what it still keeps after that.
 */
export const TtyOpen = z
  .object({
    jobId: z
      .string()
      .regex(/^j[0-9a-v]{10}$/)
      .optional(),
    after: z.number().int().min(0).optional(),
    argv: z
      .array(z.string().max(128 * 1024))
      .max(4096)
      .default([]),
    /** Ignored when the socket signed in with the browser's session cookie: the submitter is then `web:<token name>`, or for a bound token its name or `<prefix>web` (webSubmitter, server/auth.ts). */
    submitter: Submitter.optional(),
    ...JOB_PLACEMENT,
    ...JOB_OPTIONS,
    ...size,
  })
  .strict()
  .superRefine((j, ctx) => {
    checkJobOptions(j, ctx);
    checkPlacement(j, ctx);
  });
export type TtyOpen = z.infer<typeof TtyOpen>;

/** At most this much input per `input` message. */
export const TTY_MAX_INPUT = 64 * 1024;

// ---- controller ↔ worker (on the /worker socket: tty:input, tty:resize, tty:pause, tty:resume, tty:ack, tty:output) ----

/** Output bytes a worker sends before it waits for the controller's tty:ack. */
export const TTY_WORKER_WINDOW = 256 * 1024;

export const TtyInput = z.object({ jobId: z.string().max(64), fence: z.number().int(), data: z.union([z.string().max(TTY_MAX_INPUT), z.instanceof(Buffer)]) });
export type TtyInput = z.infer<typeof TtyInput>;
export const TtyResize = z.object({ jobId: z.string().max(64), fence: z.number().int(), ...size });
export type TtyResize = z.infer<typeof TtyResize>;
export const TtyJobRef = z.object({ jobId: z.string().max(64), fence: z.number().int() });
export type TtyJobRef = z.infer<typeof TtyJobRef>;
export const TtyAck = z.object({ jobId: z.string().max(64), fence: z.number().int(), bytes: z.number().int().min(0) });
export type TtyAck = z.infer<typeof TtyAck>;
export const TtyOutput = z.object({ jobId: z.string().max(64), fence: z.number().int(), data: z.instanceof(Buffer) });
export type TtyOutput = z.infer<typeof TtyOutput>;

/** Without a command, a terminal runs a login shell: bash if the host (or image) has it, else sh. */
export const LOGIN_SHELL = ['sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh; fi'];
