// copy_in / copy_out (issue 35): rc cp's routes, one small file to or from a
// device host's shared workspace under a lease (the device free, or held by
// the caller), the same 16 MiB as rc cp; the file's bytes travel as base64.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { CP_MAX_BYTES, CP_ROOT } from '../../core/cp';
import { RcError } from '../../core/errors';
import { deviceField, submitterField, type ToolContext, tool } from './tool';

/** Base64 of CP_MAX_BYTES, and a little over: a file one byte past the cap still reaches the check that says so in rc's words. */
export const CP_MAX_BASE64 = Math.ceil(CP_MAX_BYTES / 3) * 4 + 4;

const MIB = CP_MAX_BYTES / 1024 / 1024;
const pathField = z
  .string()
  .min(1)
  .max(4096)
  .describe(`The file on the device host: under ${CP_ROOT} (the host's shared workspace, on every host), or relative to it.`);

export function registerFileTools(server: McpServer, ctx: ToolContext): void {
  tool(
    server,
    ctx,
    'copy_in',
    {
      description: `Writes one file (its bytes as base64, at most ${MIB} MiB) into a device host's shared workspace (rc cp up), under a lease: the device must be free (the copy takes a short lease) or held by you (hold); one someone else holds is refused. A failed copy leaves no partial file. Bigger files belong on the host's shared storage (describe the host: its usage sheet says where).`,
      inputSchema: {
        device: deviceField,
        path: pathField,
        contentBase64: z.base64().max(CP_MAX_BASE64).describe('The file, base64-encoded.'),
        submitter: submitterField,
      },
      audited: ({ contentBase64, ...args }) => ({ ...args, bytes: Buffer.byteLength(contentBase64, 'base64') }),
    },
    async ({ device, path, contentBase64, submitter: who }) => {
      if (path.endsWith('/')) throw new RcError('bad_request', `path names the file to write, not a folder: ${path}<name>`);
      const data = Buffer.from(contentBase64, 'base64');
      if (data.length > CP_MAX_BYTES)
        throw new RcError(
          'payload_too_large',
          `the file is ${data.length} bytes; copy_in moves at most ${MIB} MiB through the controller: put bigger files on shared storage (describe the host: its usage sheet says where)`,
        );
      const r = await ctx.call.call('PUT /api/devices/:name/files', { name: device, query: { path, submitter: who ?? ctx.submitter }, body: data });
      return { to: `${device}:${path}`, bytes: r.bytes, lease: r.lease };
    },
  );

  tool(
    server,
    ctx,
    'copy_out',
    {
      description: `Reads one file (at most ${MIB} MiB) from a device host's shared workspace (rc cp down), under a lease as copy_in: returns its bytes as base64. For results a job wrote under ${CP_ROOT}; job output is in logs.`,
      inputSchema: { device: deviceField, path: pathField, submitter: submitterField },
      readOnly: true,
    },
    async ({ device, path, submitter: who }) => {
      const data = await ctx.call.bytes('GET /api/devices/:name/files', { name: device, query: { path, submitter: who ?? ctx.submitter } });
      return { from: `${device}:${path}`, bytes: data.length, contentBase64: data.toString('base64') };
    },
  );
}
