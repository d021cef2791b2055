// The tools an agent calls through MCP (issue 35): the CLI's commands, each a
// thin wrapper over the API request the CLI makes (loopback.ts), its input
// picked from the protocol's own zod schemas, its description what an agent
// needs to choose it. A refusal is a tool error carrying rc's code and
// sentence (`no_matching_device: …`), never a protocol failure.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { RcError } from '../../core/errors';
import { FINAL_STATES, type JobState } from '../../core/job-state';
import { SubmitJobFields } from '../../protocol/api';
import type { JobView } from '../../protocol/wire';
import type { Loopback } from './loopback';

/** What every tool of one MCP request has: who asks, and the way to the API as them. */
export interface ToolContext {
  call: Loopback;
  /** Who the agent acts as unless it names someone: the token's bound name, else the token's own name. */
  submitter: string;
  /** One audit row per call: the tool, what it was asked (env values left out), the token, `via mcp`. */
  audit(tool: string, args: Record<string, unknown>): Promise<void>;
}

/** The longest a `wait` call holds: a tool call never hangs; call it again to wait longer. */
export const MAX_WAIT_S = 60;

export function ok(value: object): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value as Record<string, unknown> };
}

/** rc's refusal as a tool error: `code: sentence` for the model, and the same as structured content. */
export function refused(err: unknown): CallToolResult {
  const rc = err instanceof RcError ? err : new RcError('internal', 'the controller hit an internal error; its log has the details');
  return {
    isError: true,
    content: [{ type: 'text', text: `${rc.code}: ${rc.message}` }],
    structuredContent: { error: { code: rc.code, message: rc.message } },
  };
}

type Shape = z.ZodRawShape;

/** Registers a tool whose every call is audited and whose every refusal is a tool error. */
export function tool<S extends Shape>(
  server: McpServer,
  ctx: ToolContext,
  name: string,
  config: { description: string; inputSchema: S; readOnly?: boolean },
  run: (args: z.infer<z.ZodObject<S>>) => Promise<object>,
): void {
  server.registerTool(
    name,
    { description: config.description, inputSchema: config.inputSchema, annotations: { readOnlyHint: config.readOnly ?? false } },
    // The SDK's callback types are its own generic; the schema is ours, so the arguments are what it parsed.
    (async (args: z.infer<z.ZodObject<S>>) => {
      try {
        await ctx.audit(name, args as Record<string, unknown>);
        return ok(await run(args));
      } catch (err) {
        return refused(err);
      }
    }) as never,
  );
}

const submitter = z
  .string()
  .max(200)
  .optional()
  .describe('Who the job is for (RC_SUBMITTER in the CLI). Default: the name your token is bound to, else its name. A bound token may act only as its name.');

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
  submitter,
};

export function registerTools(server: McpServer, ctx: ToolContext): void {
  tool(
    server,
    ctx,
    'whoami',
    {
      description: 'Who this token is: its name, kind (client or admin), the submitter name it is bound to (if any), and its limits. Costs nothing.',
      inputSchema: {},
      readOnly: true,
    },
    () => ctx.call.call('GET /api/whoami'),
  );

  tool(
    server,
    ctx,
    'list_devices',
    {
      description:
        "The fleet's GPUs (rc devices): each device's name (host:gpuN), state (free, busy, reserved, off, unhealthy, offline), labels and who holds it. Give a selector (`vram>=40G, gpu_family=H100`) to see only those it matches. Use it before run or hold to see what exists and what is free.",
      inputSchema: { selector: z.string().max(4096).optional().describe('A selector: comma-separated label terms, e.g. `vram>=40G, gpu_model=H100`.') },
      readOnly: true,
    },
    ({ selector }) => ctx.call.call('GET /api/devices', { query: { ...(selector ? { select: selector } : {}) } }),
  );

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
      inputSchema: {
        job: z.string().max(200).describe('The job id (j…) or name.'),
        timeoutS: z.number().int().min(1).max(MAX_WAIT_S).default(30),
      },
      readOnly: true,
    },
    async ({ job, timeoutS }) => {
      const until = Date.now() + timeoutS * 1000;
      // Quick at first (a short job ends in milliseconds), then at most once a second.
      for (let pause = 20; ; pause = Math.min(1000, pause * 2)) {
        const { job: view } = await ctx.call.call('GET /api/jobs/:id', { id: job });
        const ended = FINAL_STATES.has(view.state as JobState);
        if (ended || Date.now() + pause > until) return { ended, job: view as JobView };
        await new Promise((r) => setTimeout(r, pause));
      }
    },
  );
}
