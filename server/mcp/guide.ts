// What rc offers an agent besides tools (issue 35): each host's usage sheet as
// a resource (rc://hosts/{host}/sheet, read through GET /api/hosts/:name/sheet
// with the caller's token), and the manual's rules for sharing GPUs as the
// prompt `use_shared_gpus` (docs/agents.md, "Rules", in the tools' words).
import { type McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { RcError } from '../../core/errors';
import type { ToolContext } from './tool';

export const SHEET_URI = 'rc://hosts/{host}/sheet';

export const USE_SHARED_GPUS = `You are using rc, a scheduler for GPUs that people and other agents share. While you hold a GPU nobody else gets it, so take only what you use, for as long as you use it.

1. Look before you ask: list_devices shows what exists and what is free; explain says what a selector would match and why other devices do not. Ask for capabilities (selector \`vram>=40G\`, gpu \`H100,A100\`), not a device name, unless the work needs that exact box.
2. Read the host's usage sheet before you use a host (describe with host or device, or the resource rc://hosts/<host>/sheet): it is the operator talking to you, and where it says otherwise, the sheet wins.
3. Run work detached and wait for it: run returns the job id at once; wait returns within its timeout (call it again while ended is false); logs reads the output (tail for the last lines, offset to go on). Do not start what you will not wait for.
4. Bound long work with maxRuntimeS: a runaway job holds a GPU the whole fleet is waiting for.
5. Prefer one run that does every step (\`bash -c 'prep && train && eval'\`) to a hold. A hold needs a TTL (ttlS), keeps the GPU whether you use it or not, and captures no output: release it as soon as you are done, and extend it deliberately, never by habit.
6. Release what you take: run does it when the command ends; a hold does not.
7. copy_in / copy_out move one small file (at most 16 MiB) to or from /workspace on the device's host; models and datasets belong on the shared storage the usage sheet names.
8. A refusal is information, not an obstacle: no_matching_device means this fleet cannot do what you asked (widen the request or tell the human; do not retry in a loop); busy means every matching device is taken (queue, or try later); over_limit names the limit you hit.
9. Do not stop other people's jobs (not_job_owner), and do not clear an unhealthy (quarantined) device: report it and pick another.`;

export function registerGuide(server: McpServer, ctx: ToolContext): void {
  server.registerResource(
    'host_sheet',
    new ResourceTemplate(SHEET_URI, {
      // Every host's sheet, for a client that lists resources (GET /api/hosts: the live ones).
      list: async () => {
        const { hosts } = await ctx.call.call('GET /api/hosts', { query: {} });
        return { resources: hosts.map((h) => ({ uri: `rc://hosts/${h.name}/sheet`, name: `${h.name} usage sheet`, mimeType: 'text/markdown' })) };
      },
    }),
    {
      title: "A host's usage sheet",
      description:
        "The host's usage sheet: Markdown its operator wrote on how to use it (how to reach it, where shared storage and datasets are, what not to do). Read it before using the host; it wins over general rules. Empty when the operator wrote none.",
      mimeType: 'text/markdown',
    },
    async (uri, { host }) => {
      const name = Array.isArray(host) ? host[0]! : host!;
      try {
        await ctx.audit('read_sheet', { host: name });
        const { sheet } = await ctx.call.call('GET /api/hosts/:name/sheet', { name });
        return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text: sheet?.body ?? '' }] };
      } catch (err) {
        // A resource has no tool error: rc's code and sentence travel as the protocol error's message.
        if (err instanceof RcError) throw new Error(`${err.code}: ${err.message}`);
        throw err;
      }
    },
  );

  server.registerPrompt(
    'use_shared_gpus',
    { title: 'Using shared GPUs', description: "rc's rules for sharing GPUs with people and other agents: read them before you use the tools." },
    () => ({ messages: [{ role: 'user', content: { type: 'text', text: USE_SHARED_GPUS } }] }),
  );
}
