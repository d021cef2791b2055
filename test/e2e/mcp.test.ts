// rc over MCP (issue 35), with the SDK's real client against a real controller
// and worker: the tools and their schemas, a run → wait round trip with the
// command's exit code, rc's refusals as tool errors carrying rc's code, every
// call audited `via mcp`, and the endpoint's boundaries (no token, a session
// cookie, a foreign origin).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Stack } from '../helpers/stack';

let stack: Stack;

before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }] });
});
after(async () => {
  await stack.stop();
});

async function connect(token = stack.clientToken): Promise<Client> {
  const client = new Client({ name: 'mcp-test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${stack.controllerUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return client;
}

type ToolAnswer = { isError?: boolean; content: { type: string; text: string }[]; structuredContent?: Record<string, unknown> };
const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as ToolAnswer;

test('tools/list names the tools, each with a description and an input schema', async () => {
  const client = await connect();
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const name of ['whoami', 'list_devices', 'run', 'wait']) assert.ok(names.includes(name), name);
  for (const t of tools) {
    assert.ok((t.description ?? '').length > 40, `${t.name} has a description an agent can act on`);
    assert.equal(t.inputSchema.type, 'object');
  }
  const run = tools.find((t) => t.name === 'run')!;
  assert.ok('argv' in (run.inputSchema.properties ?? {}) && 'selector' in (run.inputSchema.properties ?? {}));
  await client.close();
});

test('run → wait: the job runs on a matching device and wait returns its exit code; audited via mcp', async () => {
  const client = await connect();
  const ran = await call(client, 'run', { argv: ['sh', '-c', 'echo hi; exit 7'] });
  assert.equal(ran.isError, undefined, ran.content[0]?.text);
  const id = (ran.structuredContent as { job: { id: string } }).job.id;
  const waited = await call(client, 'wait', { job: id, timeoutS: 30 });
  const w = waited.structuredContent as { ended: boolean; job: { state: string; exitCode: number } };
  assert.deepEqual([w.ended, w.job.state, w.job.exitCode], [true, 'failed', 7]);
  const audit = (await stack.api('GET', '/api/audit?action=mcp.*', undefined, stack.adminToken)).body as { entries?: { action: string; origin: string }[] };
  const rows = audit.entries ?? [];
  assert.ok(
    rows.some((r) => r.action === 'mcp.run' && / via mcp$/.test(r.origin)),
    JSON.stringify(rows.slice(0, 3)),
  );
  await client.close();
});

test("rc's refusals come back as tool errors with rc's code and sentence", async () => {
  const client = await connect();
  const none = await call(client, 'run', { argv: ['true'], selector: 'vram>=4000G' });
  assert.equal(none.isError, true);
  assert.match(none.content[0]!.text, /^no_matching_device: /);
  const bad = await call(client, 'run', { argv: ['true'], selector: 'vram>>' });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0]!.text, /^bad_selector: /);
  const unknown = await call(client, 'wait', { job: 'jzzzzzzzzzz', timeoutS: 1 });
  assert.match(unknown.content[0]!.text, /^not_found: /);
  await client.close();
});

test('the endpoint: no token 401, a session cookie and a foreign origin 403, GET 405', async () => {
  const init = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
  };
  const post = (headers: Record<string, string>) =>
    fetch(`${stack.controllerUrl}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(init),
    });
  assert.equal((await post({})).status, 401);
  assert.equal((await post({ authorization: 'Bearer rc_c_wrong' })).status, 401);
  assert.equal((await post({ cookie: 'rc_session=abc.def' })).status, 403);
  assert.equal((await post({ authorization: `Bearer ${stack.clientToken}`, origin: 'https://evil.example' })).status, 403);
  assert.equal((await post({ authorization: `Bearer ${stack.clientToken}` })).status, 200);
  assert.equal((await fetch(`${stack.controllerUrl}/mcp`, { headers: { authorization: `Bearer ${stack.clientToken}` } })).status, 405);
});
