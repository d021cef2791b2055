// The job tools (issue 35): run, wait, logs, kill, hold, extend, release, ps
// and jobs, each the API request its rc command makes (loopback.ts), so the
// route's rules (who may, the bound submitter, the limits) hold unchanged.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { FINAL_STATES, type JobState } from '../../core/job-state';
import { ExtendHold, KillJob, SubmitJobFields } from '../../protocol/api';
import type { JobsQuery, JobView } from '../../protocol/wire';
import { LOGS_MAX_BYTES, readLogs } from './logs';
import { deviceField, jobField, submitterField, type ToolContext, tool } from './tool';

/** The longest a `wait` (or a hold's wait to start) holds a call: a tool call never hangs; call it again to wait longer. */
export const MAX_WAIT_S = 60;

/** rc run's fields an agent gives (the rest keep the API's defaults; the route checks them all, as for the CLI). */
const RUN_INPUT = {
  ...SubmitJobFields.pick({
    argv: true,
    selector: true,
    gpus: true,
    gpu: true,
    priority: true,
    name: true,
    comment: true,
    env: true,
    cwd: true,
    maxRuntimeS: true,
    idleTimeoutS: true,
    gpuIdleTimeoutS: true,
    restarts: true,
    retries: true,
    after: true,
    afterAny: true,
    placement: true,
    cloud: true,
    maxPrice: true,
    spot: true,
    keepS: true,
  }).shape,
  submitter: submitterField,
};

/** rc hold's fields: where, and a TTL that is required (ExtendHold's: no hold through MCP without one). */
const HOLD_INPUT = {
  ...SubmitJobFields.pick({ selector: true, device: true, gpus: true, gpu: true, priority: true, wait: true, waitTimeoutS: true }).shape,
  ttlS: ExtendHold.shape.ttlS.describe("Seconds the hold lasts (required; at most 24h, and at most the token's --max-hold-ttl): it ends by itself then."),
  startS: z
    .number()
    .int()
    .min(0)
    .max(MAX_WAIT_S)
    .default(10)
    .describe(`Seconds this call waits for the hold to start (0 to ${MAX_WAIT_S}; default 10); a hold still queued then comes back with started: false.`),
  submitter: submitterField,
};

const waitS = (what: string, dflt: number) =>
  z.number().int().min(1).max(MAX_WAIT_S).default(dflt).describe(`Seconds to wait at most for ${what} (1 to ${MAX_WAIT_S}; default ${dflt}).`);

/** GET /api/jobs/:id until `done` says so or `timeoutS` passes: quick at first (a short job ends in milliseconds), then once a second. */
async function pollJob(ctx: ToolContext, job: string, timeoutS: number, done: (j: JobView) => boolean): Promise<JobView> {
  const until = Date.now() + timeoutS * 1000;
  for (let pause = 20; ; pause = Math.min(1000, pause * 2)) {
    const { job: view } = await ctx.call.call('GET /api/jobs/:id', { id: job });
    if (done(view) || Date.now() + pause > until) return view;
    await new Promise((r) => setTimeout(r, pause));
  }
}

const ended = (j: JobView) => FINAL_STATES.has(j.state as JobState);

export function registerJobTools(server: McpServer, ctx: ToolContext): void {
  tool(
    server,
    ctx,
    'run',
    {
      description:
        "Runs a command on a free GPU that matches (rc run --detach): returns the job at once, queued or running; it is never refused for being busy, it queues. Refused at once (no_matching_device) when nothing could ever match. The fleet's default --max-runtime applies unless maxRuntimeS is given. Follow it with wait, then logs; kill stops it. The GPU is held until the command ends: do not start what you will not wait for.",
      inputSchema: RUN_INPUT,
    },
    async ({ submitter: who, ...job }) => {
      const body = { ...job, kind: 'run' as const, wait: true, submitter: who ?? ctx.submitter };
      return ctx.call.call('POST /api/jobs', { body: body as never });
    },
  );

  tool(
    server,
    ctx,
    'wait',
    {
      description: `Waits for a job to end, at most timeoutS seconds (1 to ${MAX_WAIT_S}; default 30): returns the job (state, exitCode, reason) and whether it ended. A job still queued or running after that comes back with ended: false; call wait again. Costs nothing while it waits.`,
      inputSchema: { job: jobField, timeoutS: waitS('the job to end', 30) },
      readOnly: true,
    },
    async ({ job, timeoutS }) => {
      const view = await pollJob(ctx, job, timeoutS, ended);
      return { ended: ended(view), job: view };
    },
  );

  tool(
    server,
    ctx,
    'logs',
    {
      description: `A job's stored output (stdout and stderr together, as they came) as text, at most maxBytes (default and most ${LOGS_MAX_BYTES / 1024} KiB) a call: from the start, from a byte offset (offset: the nextOffset of the call before), or its last lines (tail). Returns text, offset (where it starts), nextOffset (where to go on), more (stored output is left after it) and ended (the job has ended: no more will come). Reading is free; a running job's output grows, so call again with nextOffset.`,
      inputSchema: {
        job: jobField,
        tail: z.number().int().min(0).max(100_000).optional().describe('Start at the last this many lines (not with offset).'),
        offset: z.number().int().min(0).optional().describe('Start at this byte of the output (nextOffset of an earlier call); default 0.'),
        maxBytes: z.number().int().min(1).max(LOGS_MAX_BYTES).default(LOGS_MAX_BYTES).describe(`Bytes at most in this answer (1 to ${LOGS_MAX_BYTES}).`),
      },
      readOnly: true,
    },
    (args) => readLogs(ctx.call, args),
  );

  tool(
    server,
    ctx,
    'kill',
    {
      description:
        "Stops a queued or running job you submitted (rc kill): its whole process group dies and its GPUs are free. Refused (not_job_owner) for a job of another submitter: leave other people's jobs alone. Returns the job as it stands (running: being stopped).",
      inputSchema: { job: jobField, reason: KillJob.shape.reason.describe("Why, for the job's record and the audit log."), submitter: submitterField },
    },
    ({ job, reason, submitter: who }) =>
      ctx.call.call('POST /api/jobs/:id/kill', { id: job, body: { submitter: who ?? ctx.submitter, ...(reason ? { reason } : {}) } }),
  );

  tool(
    server,
    ctx,
    'hold',
    {
      description: `Claims GPUs with no command (rc hold) for ttlS seconds: for work over several steps (copy_in, then ssh to the host, then copy_out). Returns the hold (its id, devices, expiresAt) once it started, or after startS with started: false while it waits in the queue. wait: false refuses (busy) rather than queue. The GPUs are held, idle or not, until release or the TTL: release it as soon as you are done; prefer run, which frees them by itself. Extend it deliberately.`,
      inputSchema: HOLD_INPUT,
    },
    async ({ submitter: who, startS, ...where }) => {
      const body = { ...where, kind: 'hold' as const, submitter: who ?? ctx.submitter };
      const { job } = await ctx.call.call('POST /api/jobs', { body });
      const view = job.state === 'queued' && startS > 0 ? await pollJob(ctx, job.id, startS, (j) => j.state !== 'queued') : job;
      return { started: view.state === 'running', job: view };
    },
  );

  tool(
    server,
    ctx,
    'extend',
    {
      description:
        "Makes a hold of yours end ttlS seconds from now (rc hold extend): at most 24h, and at most the token's --max-hold-ttl. Returns the hold with its new expiresAt.",
      inputSchema: { job: jobField.describe('The hold id (j…).'), ttlS: ExtendHold.shape.ttlS, submitter: submitterField },
    },
    ({ job, ttlS, submitter: who }) => ctx.call.call('POST /api/holds/:id/extend', { id: job, body: { submitter: who ?? ctx.submitter, ttlS } }),
  );

  tool(
    server,
    ctx,
    'release',
    {
      description: 'Ends a hold of yours (rc release): its GPUs are free at once for the next job. Do it as soon as you are done with a hold.',
      inputSchema: { job: jobField.describe('The hold id (j…).'), submitter: submitterField },
    },
    ({ job, submitter: who }) => ctx.call.call('POST /api/holds/:id/release', { id: job, body: { submitter: who ?? ctx.submitter } }),
  );

  tool(
    server,
    ctx,
    'ps',
    {
      description:
        "What runs and waits now (rc ps): running jobs first, then queued ones in the order they will be considered, with each one's position, devices, submitter, and a hold's expiresAt; arrays with tasks left. A page of `limit` jobs; `next` is the cursor for the page after (give it as after). Costs nothing.",
      inputSchema: {
        limit: z.number().int().min(1).max(5000).default(100).describe('Jobs in this page (1 to 5000; default 100).'),
        after: z.string().max(200).optional().describe('The next of the page before.'),
        tasks: z.boolean().optional().describe("List an array's tasks as jobs too."),
      },
      readOnly: true,
    },
    ({ limit, after, tasks }) => ctx.call.call('GET /api/ps', { query: { limit: String(limit), after, ...(tasks ? { tasks: '1' as const } : {}) } }),
  );

  tool(
    server,
    ctx,
    'jobs',
    {
      description:
        'Current and past jobs (rc jobs), newest first, with their state, exit code, reason and devices: to find a job again or see how earlier ones ended. Filters combine. Costs nothing.',
      inputSchema: {
        state: z.string().max(200).optional().describe('States, comma-separated: queued, running, succeeded, failed, killed, lost, cancelled, preempted.'),
        kind: z.string().max(100).optional().describe('Kinds, comma-separated: run, hold, tty.'),
        device: deviceField.optional(),
        submitter: z.string().max(200).optional().describe('Only jobs of this submitter.'),
        name: z.string().max(200).optional().describe('Only jobs given this name (run name).'),
        since: z.string().max(100).optional().describe('Only jobs created since: a duration back (30m, 2h, 7d) or an ISO time.'),
        mine: z.boolean().optional().describe('Only jobs submitted with your token.'),
        array: z.string().max(200).optional().describe("An array's id: its tasks, by index."),
        before: z.string().max(200).optional().describe('A job id: the page after it (older).'),
        limit: z.number().int().min(1).max(1000).default(50).describe('At most this many (1 to 1000; default 50).'),
      },
      readOnly: true,
    },
    ({ mine, limit, ...filters }) => {
      const query: JobsQuery = { ...filters, limit: String(limit), ...(mine ? { mine: '1' as const } : {}) };
      return ctx.call.call('GET /api/jobs', { query });
    },
  );
}
