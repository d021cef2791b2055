// What every MCP tool shares (issue 35): who asks and the way to the API as
// them (ToolContext), the `tool()` helper that audits each call and turns a
// refusal into a tool error carrying rc's code and sentence (never a protocol
// failure), and the input fields several tools take.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { RcError } from '../../core/errors';
import type { Loopback } from './loopback';

/** What every tool of one MCP request has: who asks, and the way to the API as them. */
export interface ToolContext {
  call: Loopback;
  /** Who the agent acts as unless it names someone: the token's bound name, else the token's own name. */
  submitter: string;
  /** An admin token: the admin tools are offered (tools-admin.ts). */
  admin: boolean;
  /** One audit row per call: the tool, what it was asked (env values left out), the token, `via mcp`. */
  audit(tool: string, args: Record<string, unknown>): Promise<void>;
}

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
  config: {
    description: string;
    inputSchema: S;
    readOnly?: boolean;
    /** What the audit row keeps of the arguments, where not all of them (copy_in: a file's size, not its bytes). */
    audited?: (args: z.infer<z.ZodObject<S>>) => Record<string, unknown>;
  },
  run: (args: z.infer<z.ZodObject<S>>) => Promise<object>,
): void {
  server.registerTool(
    name,
    { description: config.description, inputSchema: config.inputSchema, annotations: { readOnlyHint: config.readOnly ?? false } },
    // The SDK's callback types are its own generic; the schema is ours, so the arguments are what it parsed.
    (async (args: z.infer<z.ZodObject<S>>) => {
      try {
        await ctx.audit(name, config.audited ? config.audited(args) : (args as Record<string, unknown>));
        return ok(await run(args));
      } catch (err) {
        return refused(err);
      }
    }) as never,
  );
}

export const submitterField = z
  .string()
  .max(200)
  .optional()
  .describe('Who the job is for (RC_SUBMITTER in the CLI). Default: the name your token is bound to, else its name. A bound token may act only as its name.');

export const jobField = z.string().max(200).describe('The job id (j…), a job name (run name), or an array task (<array-id>:<index>).');

export const deviceField = z.string().max(300).describe('A device name, host:gpuN (list_devices lists them).');
