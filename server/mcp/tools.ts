// The tools an agent calls through MCP (issue 35): the CLI's commands, each a
// thin wrapper over the API request the CLI makes (loopback.ts), its input
// picked from the protocol's own zod schemas, its description what an agent
// needs to choose it; and the usage sheets as resources, the rules as a prompt.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { registerGuide } from './guide';
import type { ToolContext } from './tool';
import { registerAdminTools } from './tools-admin';
import { registerFileTools } from './tools-files';
import { registerFleetTools } from './tools-fleet';
import { registerJobTools } from './tools-jobs';

export type { ToolContext } from './tool';
export { MAX_WAIT_S } from './tools-jobs';

export function registerTools(server: McpServer, ctx: ToolContext): void {
  registerFleetTools(server, ctx);
  registerJobTools(server, ctx);
  registerFileTools(server, ctx);
  registerAdminTools(server, ctx);
  registerGuide(server, ctx);
}
