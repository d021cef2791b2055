// rc mcp, the stdio bridge (issue 35): the SDK's real StdioClientTransport
// starts `node dist/rc.cjs mcp` against a real controller and worker and does
// the run → wait round trip; a refused token and a controller out of reach are
// that request's JSON-RPC error (rc's code and sentence) and the bridge goes
// on; stdin closed ends it with 0; stdout carries JSON-RPC alone.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Stack } from '../helpers/stack';

const RC = join(import.meta.dirname, '..', '..', 'dist', 'rc.cjs');
let stack: Stack;

before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }] });
});
after(async () => {
  await stack.stop();
});

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/** `rc mcp` started by hand: messages in as lines, each stdout line read as it comes; `closed` is its exit once stdin ends. */
function bridge(env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, [RC, 'mcp'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } as unknown as NodeJS.ProcessEnv,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  let buf = '';
  const waiting: (() => void)[] = [];
  child.stdout!.on('data', (c: Buffer) => {
    buf += c.toString();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      for (const w of waiting.splice(0)) w();
    }
  });
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  let read = 0;
  return {
    send: (m: unknown) => child.stdin!.write(`${JSON.stringify(m)}\n`),
    raw: (line: string) => child.stdin!.write(`${line}\n`),
    /** The next line of stdout, as JSON (it must be JSON: nothing else may go there). */
    async next(): Promise<{
      jsonrpc: string;
      id: unknown;
      result?: Record<string, unknown>;
      error?: { code: number; message: string; data?: { code: string } };
    }> {
      const deadline = Date.now() + 15_000;
      while (lines.length <= read) {
        if (Date.now() > deadline) throw new Error(`no answer on stdout; stderr: ${stderr}`);
        await new Promise<void>((r) => {
          waiting.push(r);
          setTimeout(r, 200);
        });
      }
      return JSON.parse(lines[read++]!);
    },
    async close() {
      child.stdin!.end();
      const code = await exited;
      return { code, lines: [...lines, ...(buf ? [buf] : [])], stderr };
    },
    alive: () => child.exitCode === null && child.signalCode === null,
  };
}

/** A local port nothing listens on: a controller that is down. */
async function deadUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}`;
}

test('the SDK client over rc mcp: initialize, tools/list, run → wait with the exit code, as RC_SUBMITTER; stdout is JSON-RPC alone', async () => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [RC, 'mcp'],
    env: { PATH: process.env.PATH!, RC_CONTROLLER: stack.controllerUrl, RC_TOKEN: stack.clientToken, RC_SUBMITTER: 'agent-7' },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'stdio-test', version: '1' });
  const errors: Error[] = [];
  client.onerror = (e) => errors.push(e);
  await client.connect(transport);
  const { tools } = await client.listTools();
  for (const name of ['whoami', 'list_devices', 'run', 'wait'])
    assert.ok(
      tools.some((t) => t.name === name),
      name,
    );
  const ran = (await client.callTool({ name: 'run', arguments: { argv: ['sh', '-c', 'exit 3'] } })) as unknown as {
    isError?: boolean;
    structuredContent: { job: { id: string; submitter: string } };
  };
  assert.equal(ran.isError, undefined, JSON.stringify(ran));
  assert.equal(ran.structuredContent.job.submitter, 'agent-7', 'RC_SUBMITTER is who the tools act as');
  const waited = (await client.callTool({ name: 'wait', arguments: { job: ran.structuredContent.job.id, timeoutS: 30 } })) as unknown as {
    structuredContent: { ended: boolean; job: { state: string; exitCode: number } };
  };
  assert.deepEqual([waited.structuredContent.ended, waited.structuredContent.job.state, waited.structuredContent.job.exitCode], [true, 'failed', 3]);
  await client.close();
  // A line of stdout that is not JSON-RPC would have reached onerror.
  assert.deepEqual(errors, []);
});

test('a refused token: each request is answered with an error naming unauthorized, the bridge goes on, and stdin closed ends it with 0', async () => {
  const b = bridge({ RC_CONTROLLER: stack.controllerUrl, RC_TOKEN: 'rc_c_wrong' });
  b.send(INIT);
  const first = await b.next();
  assert.equal(first.id, 1);
  assert.equal(first.error?.code, -32000);
  assert.match(first.error!.message, /^unauthorized: /);
  assert.equal(first.error?.data?.code, 'unauthorized');
  // A notification gets no line; the next request gets its own answer.
  b.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  b.send({ jsonrpc: '2.0', id: 'two', method: 'tools/list' });
  const second = await b.next();
  assert.equal(second.id, 'two');
  assert.match(second.error!.message, /^unauthorized: /);
  assert.ok(b.alive());
  const { code, lines, stderr } = await b.close();
  assert.equal(code, 0, stderr);
  assert.equal(lines.length, 2, lines.join('\n'));
  for (const l of lines) assert.equal(JSON.parse(l).jsonrpc, '2.0');
  assert.match(stderr, /unauthorized/, 'the notification nobody could answer is told on stderr');
});

test('a controller that is down: the request is answered with an error saying it cannot be reached; the next of RC_CONTROLLER answers', async () => {
  const dead = await deadUrl();
  const down = bridge({ RC_CONTROLLER: dead, RC_TOKEN: stack.clientToken });
  down.send(INIT);
  const answer = await down.next();
  assert.equal(answer.id, 1);
  assert.match(answer.error!.message, /^unreachable: cannot reach the controller at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  assert.equal((await down.close()).code, 0);

  const listed = bridge({ RC_CONTROLLER: `${dead},${stack.controllerUrl}`, RC_TOKEN: stack.clientToken });
  listed.send(INIT);
  const init = await listed.next();
  assert.equal(init.error, undefined, JSON.stringify(init));
  assert.equal((init.result as { serverInfo: { name: string } }).serverInfo.name, 'rc');
  listed.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  listed.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'whoami', arguments: {} } });
  const who = await listed.next();
  assert.equal(who.id, 2);
  assert.equal((who.result as { isError?: boolean }).isError, undefined, JSON.stringify(who));
  const { code, lines } = await listed.close();
  assert.equal(code, 0);
  assert.equal(lines.length, 2, lines.join('\n'));
});

test('a line that is not JSON is a parse error, and the bridge goes on', async () => {
  const b = bridge({ RC_CONTROLLER: stack.controllerUrl, RC_TOKEN: stack.clientToken });
  b.raw('{not json');
  const bad = await b.next();
  assert.equal(bad.error?.code, -32700);
  b.send(INIT);
  assert.equal((await b.next()).id, 1);
  assert.equal((await b.close()).code, 0);
});
