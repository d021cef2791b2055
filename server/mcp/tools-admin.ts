// The admin tools (issue 35): turning a host off for maintenance and on again
// (rc admin host off / on), what an operator's agent most often does.
//
// They are registered for admin tokens only: tools/list is what an agent's
// model reads, and a client's agent offered tools it can never use would spend
// its context on them and try them. This is not the guard: a tool calls the
// route with the caller's own token (loopback.ts), and the route refuses a
// client token (`forbidden`) whatever MCP offers. A client that calls one
// anyway gets the SDK's tool error `Tool host_off not found`.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { HostName, TurnHostOff } from '../../protocol/api';
import { type ToolContext, tool } from './tool';

export const ADMIN_TOOLS = ['host_off', 'host_on'] as const;

export function registerAdminTools(server: McpServer, ctx: ToolContext): void {
  if (!ctx.admin) return;
  tool(
    server,
    ctx,
    'host_off',
    {
      description:
        'Admin: turns a host off for maintenance (rc admin host off): no new job starts on its devices; running ones finish (its devices show off (busy) until then). Say why in reason: people see it in list_devices and describe. host_on undoes it. Returns the host and whether it was already off.',
      inputSchema: { host: HostName.describe('The host name.'), reason: TurnHostOff.shape.reason.describe('Why, shown to everyone and audited.') },
    },
    ({ host, reason }) => ctx.call.call('POST /api/admin/hosts/:name/off', { name: host, body: { ...(reason ? { reason } : {}) } }),
  );

  tool(
    server,
    ctx,
    'host_on',
    {
      description: 'Admin: turns a host that was turned off on again (rc admin host on): it takes jobs again. Returns the host and whether it was already on.',
      inputSchema: { host: HostName.describe('The host name.') },
    },
    ({ host }) => ctx.call.call('POST /api/admin/hosts/:name/on', { name: host, body: {} }),
  );
}
