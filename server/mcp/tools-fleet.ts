// The fleet tools (issue 35): whoami, list_devices, describe, explain and
// usage, each the API request its rc command makes (loopback.ts).
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { RcError } from '../../core/errors';
import { Explain, HostName } from '../../protocol/api';
import type { UsageBy } from '../../protocol/wire';
import { deviceField, jobField, type ToolContext, tool } from './tool';

export function registerFleetTools(server: McpServer, ctx: ToolContext): void {
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
    'describe',
    {
      description:
        "One thing in full (rc describe), given exactly one of: device (its state, holder, GPU sample, every label with its source and age, its host's usage sheet, its recent jobs), host (the host, its devices, its usage sheet and recent jobs) or job (state, exit code, reason, command, devices, limits; env names, never values). Read a host's usage sheet before you use it: it is the operator talking to you, and it wins over general rules. Costs nothing.",
      inputSchema: {
        device: deviceField.optional(),
        host: HostName.optional().describe('A host name (the part of a device name before :gpuN).'),
        job: jobField.optional(),
      },
      readOnly: true,
    },
    async ({ device, host, job }) => {
      const given = [device, host, job].filter((v) => v !== undefined).length;
      if (given !== 1) throw new RcError('bad_request', `describe takes exactly one of device, host or job (got ${given})`);
      if (device !== undefined) return ctx.call.call('GET /api/devices/:name', { name: device });
      if (host !== undefined) return ctx.call.call('GET /api/hosts/:name', { name: host });
      return ctx.call.call('GET /api/jobs/:id', { id: job! });
    },
  );

  tool(
    server,
    ctx,
    'explain',
    {
      description:
        'What a request would match, submitting nothing (rc run --explain): the matching devices and how many are free, how many jobs queue for them, and for every other device why not (`vram=24G < 40G`, `rack: label missing`). Use it before committing to a selector, and when run or hold is refused with no_matching_device. Costs nothing.',
      inputSchema: {
        ...Explain.shape,
        selector: Explain.shape.selector.describe('A selector: comma-separated label terms, e.g. `vram>=40G, gpu_family=H100`.'),
        device: Explain.shape.device.describe('One device (host:gpuN) instead of a selector.'),
        gpu: Explain.shape.gpu.describe('GPU choices in order of preference with counts, e.g. `A100:2,H100` (instead of gpus).'),
        gpus: Explain.shape.gpus.describe('Devices on one host (1-8; default 1).'),
      },
      readOnly: true,
    },
    (body) => ctx.call.call('POST /api/explain', { body }),
  );

  tool(
    server,
    ctx,
    'usage',
    {
      description:
        "Device-hours leased over a window (rc usage), grouped by submitter, token, team, host or model, split into jobs, terminals and holds, with the hours the GPUs sat idle; key drills into one group's leases. Use it to see what you used and what sat idle. Costs nothing.",
      inputSchema: {
        since: z.string().max(100).optional().describe('How far back: a duration (12h, 7d; default 7d).'),
        by: z
          .enum(['submitter', 'token', 'team', 'host', 'model'] satisfies UsageBy[])
          .optional()
          .describe('How rows are grouped (default submitter).'),
        key: z.string().max(300).optional().describe('One key of `by`: its leases, the longest first.'),
      },
      readOnly: true,
    },
    (query) => ctx.call.call('GET /api/usage', { query }),
  );
}
