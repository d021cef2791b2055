// POST /mcp: the Model Context Protocol's Streamable HTTP transport, served by
// the controller itself (issue 35) with the official SDK. Stateless: each
// request is answered on its own (a fresh server and transport, no session
// kept), so a fleet's controllers answer an agent alike and one that restarts
// loses nothing. Authenticated as the API is (a Bearer token, client or
// admin, the same guess limits); a browser's session cookie and a foreign
// Origin are refused, so no page can drive an agent's tools.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { RcError } from '../../core/errors';
import { MCP_SUBMITTER_HEADER } from '../../core/mcp-headers';
import type { AuthLimit } from '../auth-limit';
import { bearer, identifyFrom, type Identity, requireKind } from '../auth';
import type { Db, Sql } from '../db';
import { readBody, sendJson } from '../http/router';
import { ownOrigins, sessionCookie } from '../http/session';
import { originOf } from '../request-scope';
import { Loopback } from './loopback';
import { CP_MAX_BASE64 } from './tools-files';
import { registerTools, type ToolContext } from './tools';

export const MCP_PATH = '/mcp';
/** A request's body at most: copy_in's file (rc cp's 16 MiB) as base64, and room for the rest. */
const MCP_MAX_BODY = CP_MAX_BASE64 + 1024 * 1024;

export interface McpDeps {
  db: Db;
  sql: Sql;
  authLimit: AuthLimit | null;
  publicUrl: string | null;
  version: string;
  log: (msg: string) => void;
  /** This controller as it reaches itself (null until it listens). */
  selfUrl: () => string | null;
  /** This process's secret for loopback requests (server/mcp/loopback.ts MCP_HEADER). */
  nonce: string;
  audited: () => void;
}

export class McpEndpoint {
  constructor(private readonly deps: McpDeps) {}

  /** Answers /mcp; false for any other path. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    // The path alone, as sent: a target that is not a path (`http://[::1`) is the router's to refuse, not a URL to parse here.
    if ((req.url ?? '').split('?')[0] !== MCP_PATH) return false;
    try {
      // Stateless: no stream of the server's own to open (GET) and no session to end (DELETE).
      if (req.method !== 'POST') {
        sendJson(
          res,
          405,
          { jsonrpc: '2.0', error: { code: -32000, message: 'this MCP endpoint is stateless: POST a JSON-RPC message' }, id: null },
          { allow: 'POST' },
        );
        return true;
      }
      const identity = await this.identity(req);
      const self = this.deps.selfUrl();
      if (!self) throw new RcError('database_unavailable', 'the controller is starting; try again in a moment');
      const body = await readBody(req, z.unknown(), { maxBytes: MCP_MAX_BODY });
      const address = req.socket.remoteAddress;
      const ctx: ToolContext = {
        call: new Loopback(self, bearer(req.headers.authorization)!, `${this.deps.nonce} ${address ?? 'unknown'}`),
        submitter: defaultSubmitter(identity, req.headers[MCP_SUBMITTER_HEADER]),
        admin: identity.kind === 'admin',
        audit: (tool, args) => this.audit(identity, `${originOf(address, 'token')} via mcp`, tool, args),
      };
      const server = new McpServer({ name: 'rc', version: this.deps.version }, { capabilities: { tools: {}, resources: {}, prompts: {} } });
      registerTools(server, ctx);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req as IncomingMessage & { auth?: undefined }, res, body);
    } catch (err) {
      const rc = err instanceof RcError ? err : null;
      if (!rc) this.deps.log(`mcp: internal error: ${err instanceof Error ? err.stack : String(err)}`);
      sendJson(
        res,
        rc ? rc.status : 500,
        rc ? rc.toBody() : { error: { code: 'internal', message: 'the controller hit an internal error; its log has the details' } },
      );
    }
    return true;
  }

  /** A bearer token of a client or an admin; a session cookie (a browser) or another site's page is refused. */
  private async identity(req: IncomingMessage): Promise<Identity> {
    const origin = req.headers.origin;
    if (origin !== undefined && !ownOrigins(req.headers, this.deps.publicUrl).includes(origin))
      throw new RcError('forbidden', `MCP requests from a web page of another site (${origin.slice(0, 100)}) are refused`);
    const token = bearer(req.headers.authorization);
    if (token === null && sessionCookie(req.headers.cookie) !== null)
      throw new RcError('forbidden', "MCP takes a bearer token (Authorization: Bearer <token>), not the dashboard's session cookie");
    return requireKind(await identifyFrom(this.deps.db, this.deps.authLimit, req.socket.remoteAddress, token), 'client');
  }

  private async audit(identity: Identity, origin: string, tool: string, args: Record<string, unknown>): Promise<void> {
    // An environment's values may be secrets: only its keys are kept, as a job's are once it ends.
    const { env, ...rest } = args as { env?: Record<string, string> | null } & Record<string, unknown>;
    const detail = { ...rest, ...(env ? { env: Object.keys(env) } : {}), tokenId: identity.tokenId, token: identity.name };
    await this.deps.sql`insert into audit (actor, action, target, detail, origin, token_id)
      values (${identity.name}, ${`mcp.${tool}`}, ${targetOf(args)}, ${JSON.stringify(detail)}::text::jsonb, ${origin}, ${identity.tokenId})`;
    this.deps.audited();
  }
}

/** The name the client asks for (rc mcp's RC_SUBMITTER: the routes refuse one outside a bound token's), else the token's bound name (a bound prefix `team/` gives `team/mcp`), else the token's own name. */
export function defaultSubmitter(identity: Pick<Identity, 'name' | 'submitter'>, asked?: string | string[]): string {
  if (typeof asked === 'string' && asked !== '') return asked;
  if (identity.submitter === null) return identity.name;
  return identity.submitter.endsWith('/') ? `${identity.submitter}mcp` : identity.submitter;
}

function targetOf(args: Record<string, unknown>): string | null {
  for (const k of ['job', 'device', 'host'] as const) if (typeof args[k] === 'string') return args[k];
  return null;
}
