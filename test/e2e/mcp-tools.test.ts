// rc's MCP tools beyond the skeleton (issue 35), with the SDK's real client
// against a real controller and workers: every tool with a real effect
// (describe, explain, logs with tail and offset, kill, hold → extend →
// release, ps, jobs, usage, copy_in → copy_out), the usage sheet as a
// resource and the rules as a prompt; each class of refusal as a tool error
// with rc's code; the admin tools for admin tokens only; a bound token kept
// to its name; 50 sessions at once; and a session going on at another
// controller of the fleet.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Stack } from '../helpers/stack';

let stack: Stack;

before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 2 }] });
});
after(async () => {
  await stack.stop();
});

/** An SDK client of `url`'s /mcp with `token`; `fetchVia` may send its requests elsewhere. */
async function connect(token = stack.clientToken, fetchVia?: typeof fetch): Promise<Client> {
  const client = new Client({ name: 'mcp-tools-test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${stack.controllerUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      ...(fetchVia ? { fetch: fetchVia } : {}),
    }),
  );
  return client;
}

type ToolAnswer = { isError?: boolean; content: { type: string; text: string }[]; structuredContent?: Record<string, unknown> };
const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as ToolAnswer;

/** The tool's result, asserting it is not an error. */
async function use<T>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const r = await call(client, name, args);
  assert.equal(r.isError, undefined, `${name}: ${r.content[0]?.text}`);
  return r.structuredContent as T;
}

/** The tool's error text, asserting it is one with rc's `code`. */
async function refusedWith(client: Client, code: string, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const r = await call(client, name, args);
  assert.equal(r.isError, true, `${name} should be refused: ${r.content[0]?.text}`);
  assert.match(r.content[0]!.text, new RegExp(`^${code}: `), r.content[0]!.text);
  return r.content[0]!.text;
}

type Job = { id: string; state: string; exitCode: number | null; devices: string[] | null; expiresAt: string | null; submitter: string };

const allFree = () => stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'every device to be free');

async function clientToken(name: string, submitter?: string): Promise<string> {
  const r = await stack.api('POST', '/api/admin/tokens', { name, ...(submitter ? { submitter } : {}) }, stack.adminToken);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return (r.body as { token: string }).token;
}

test('tools/list: every tool with a description and a schema; the admin tools only for an admin token', async () => {
  const TOOLS = [
    'whoami',
    'list_devices',
    'describe',
    'explain',
    'run',
    'wait',
    'logs',
    'kill',
    'hold',
    'extend',
    'release',
    'ps',
    'jobs',
    'usage',
    'copy_in',
    'copy_out',
  ];
  const client = await connect();
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
  for (const t of tools) {
    assert.ok((t.description ?? '').length > 60, `${t.name} has a description an agent can act on`);
    assert.equal(t.inputSchema.type, 'object');
  }
  const hold = tools.find((t) => t.name === 'hold')!;
  assert.ok(hold.inputSchema.required?.includes('ttlS'), 'a hold through MCP needs a TTL');
  await client.close();

  const admin = await connect(stack.adminToken);
  const names = (await admin.listTools()).tools.map((t) => t.name);
  assert.deepEqual(names.sort(), [...TOOLS, 'host_off', 'host_on'].sort());
  await admin.close();
});

test('describe a device, a host and a job; explain; list_devices; the sheet as a resource; the rules as a prompt', async () => {
  const sheet = '# alpha\nData is under /data. Do not run on gpu1 after 18:00.\n';
  assert.equal((await stack.api('PUT', '/api/hosts/alpha/sheet', { body: sheet }, stack.adminToken)).status, 200);
  const client = await connect();

  const dev = await use<{ device: { name: string }; sheet: { body: string } }>(client, 'describe', { device: 'alpha:gpu0' });
  assert.equal(dev.device.name, 'alpha:gpu0');
  assert.equal(dev.sheet.body, sheet);
  const host = await use<{ host: { name: string }; devices: unknown[]; sheet: { body: string } }>(client, 'describe', { host: 'alpha' });
  assert.deepEqual([host.host.name, host.devices.length, host.sheet.body], ['alpha', 2, sheet]);
  const ran = await use<{ job: Job }>(client, 'run', { argv: ['true'], name: 'mcp-describe' });
  const job = await use<{ job: Job }>(client, 'describe', { job: 'mcp-describe' });
  assert.equal(job.job.id, ran.job.id);
  await refusedWith(client, 'bad_request', 'describe', { device: 'alpha:gpu0', job: ran.job.id });
  await refusedWith(client, 'bad_request', 'describe', {});
  await refusedWith(client, 'not_found', 'describe', { device: 'alpha:gpu9' });

  const why = await use<{ matching: { name: string }[]; notMatching: { name: string; reasons: string[] }[] }>(client, 'explain', { selector: 'vram>=4000G' });
  assert.equal(why.matching.length, 0);
  assert.equal(why.notMatching.length, 2);
  assert.ok(why.notMatching[0]!.reasons.length > 0);
  const some = await use<{ matching: unknown[]; free: number }>(client, 'explain', { device: 'alpha:gpu1' });
  assert.equal(some.matching.length, 1);
  await refusedWith(client, 'bad_selector', 'explain', { selector: 'vram>>4' });
  await refusedWith(client, 'bad_selector', 'list_devices', { selector: 'vram>>4' });
  const listed = await use<{ devices: { name: string }[] }>(client, 'list_devices', {});
  assert.deepEqual(listed.devices.map((d) => d.name).sort(), ['alpha:gpu0', 'alpha:gpu1']);

  const templates = await client.listResourceTemplates();
  assert.deepEqual(
    templates.resourceTemplates.map((t) => t.uriTemplate),
    ['rc://hosts/{host}/sheet'],
  );
  const resources = await client.listResources();
  assert.deepEqual(
    resources.resources.map((r) => r.uri),
    ['rc://hosts/alpha/sheet'],
  );
  const read = await client.readResource({ uri: 'rc://hosts/alpha/sheet' });
  assert.equal((read.contents[0] as { text: string }).text, sheet);
  await assert.rejects(client.readResource({ uri: 'rc://hosts/nohost/sheet' }), /not_found: /);

  const prompts = await client.listPrompts();
  assert.deepEqual(
    prompts.prompts.map((p) => p.name),
    ['use_shared_gpus'],
  );
  const prompt = await client.getPrompt({ name: 'use_shared_gpus' });
  const text = (prompt.messages[0]!.content as { text: string }).text;
  for (const rule of ['list_devices', 'usage sheet', 'wait', 'release', 'TTL', 'no_matching_device']) assert.ok(text.includes(rule), rule);
  await client.close();
});

test('logs: the whole output, its last lines (tail), and pages from a byte offset with more and nextOffset', async () => {
  const client = await connect();
  // 200 lines of 5 bytes on stdout, then one on stderr.
  const ran = await use<{ job: Job }>(client, 'run', { argv: ['sh', '-c', 'for i in $(seq 1 200); do printf "l%03d\\n" $i; done; echo err >&2'] });
  const w = await use<{ ended: boolean; job: Job }>(client, 'wait', { job: ran.job.id, timeoutS: 30 });
  assert.deepEqual([w.ended, w.job.state], [true, 'succeeded']);
  const expected = `${Array.from({ length: 200 }, (_, i) => `l${String(i + 1).padStart(3, '0')}\n`).join('')}err\n`;

  const all = await use<{ text: string; offset: number; nextOffset: number; more: boolean; ended: boolean }>(client, 'logs', { job: ran.job.id });
  assert.deepEqual(all, { job: ran.job.id, text: expected, offset: 0, nextOffset: expected.length, more: false, ended: true });

  const tail = await use<{ text: string; offset: number; nextOffset: number; more: boolean }>(client, 'logs', { job: ran.job.id, tail: 2 });
  assert.equal(tail.text, 'l200\nerr\n');
  assert.equal(tail.offset, expected.length - 9);
  assert.deepEqual([tail.nextOffset, tail.more], [expected.length, false]);

  // Paged 300 bytes at a time from the start: the pages, joined, are the output.
  let offset = 0;
  let joined = '';
  let pages = 0;
  for (;;) {
    const page = await use<{ text: string; offset: number; nextOffset: number; more: boolean }>(client, 'logs', { job: ran.job.id, offset, maxBytes: 300 });
    assert.equal(page.offset, offset);
    assert.ok(Buffer.byteLength(page.text) <= 300);
    joined += page.text;
    offset = page.nextOffset;
    pages++;
    if (!page.more) break;
  }
  assert.equal(joined, expected);
  assert.equal(pages, Math.ceil(expected.length / 300));
  const past = await use<{ text: string; more: boolean }>(client, 'logs', { job: ran.job.id, offset: 100_000 });
  assert.deepEqual([past.text, past.more], ['', false]);

  await refusedWith(client, 'bad_request', 'logs', { job: ran.job.id, tail: 1, offset: 0 });
  const capped = await call(client, 'logs', { job: ran.job.id, maxBytes: 64 * 1024 + 1 });
  assert.equal(capped.isError, true, 'never more than 64 KiB in one call');
  await client.close();
});

test('logs cuts a page between characters, and reads a running job', async () => {
  const client = await connect();
  const ran = await use<{ job: Job }>(client, 'run', { argv: ['sh', '-c', 'printf "ééé"; sleep 60'] });
  await stack.waitFor(async () => (await use<{ text: string }>(client, 'logs', { job: ran.job.id })).text === 'ééé', 'the output to be stored');
  const page = await use<{ text: string; nextOffset: number; more: boolean; ended: boolean }>(client, 'logs', { job: ran.job.id, maxBytes: 3 });
  assert.deepEqual([page.text, page.nextOffset, page.more, page.ended], ['é', 2, true, false]);
  const rest = await use<{ text: string }>(client, 'logs', { job: ran.job.id, offset: 2 });
  assert.equal(rest.text, 'éé');
  // kill: the job ends killed.
  const killed = await use<{ job: Job }>(client, 'kill', { job: ran.job.id, reason: 'done reading' });
  assert.equal(killed.job.id, ran.job.id);
  const w = await use<{ ended: boolean; job: Job }>(client, 'wait', { job: ran.job.id, timeoutS: 30 });
  assert.deepEqual([w.ended, w.job.state], [true, 'killed']);
  await client.close();
  await allFree();
});

test('hold → copy_in → copy_out → extend → release; busy and no match; ps, jobs and usage', async () => {
  await allFree();
  const client = await connect();
  const held = await use<{ started: boolean; job: Job }>(client, 'hold', { device: 'alpha:gpu0', ttlS: 600 });
  assert.equal(held.started, true);
  assert.deepEqual(held.job.devices, ['alpha:gpu0']);
  const id = held.job.id;
  const firstEnd = Date.parse(held.job.expiresAt!);

  const bytes = Buffer.from([0, 1, 2, 250, 255, ...Buffer.from('hello from mcp\n')]);
  const put = await use<{ to: string; bytes: number; lease: string }>(client, 'copy_in', {
    device: 'alpha:gpu0',
    path: '/workspace/mcp-in.bin',
    contentBase64: bytes.toString('base64'),
  });
  assert.deepEqual([put.bytes, put.lease], [bytes.length, id], 'the copy went under the hold');
  const got = await use<{ bytes: number; contentBase64: string }>(client, 'copy_out', { device: 'alpha:gpu0', path: 'mcp-in.bin' });
  assert.equal(got.bytes, bytes.length);
  assert.deepEqual(Buffer.from(got.contentBase64, 'base64'), bytes);
  // Past the API's 2 MiB body (the endpoint takes rc cp's 16 MiB as base64), and one byte past rc cp's cap.
  const big = Buffer.alloc(3 * 1024 * 1024, 7);
  const bigPut = await use<{ bytes: number }>(client, 'copy_in', { device: 'alpha:gpu0', path: 'mcp-big.bin', contentBase64: big.toString('base64') });
  assert.equal(bigPut.bytes, big.length);
  const over = Buffer.alloc(16 * 1024 * 1024 + 1).toString('base64');
  assert.match(
    await refusedWith(client, 'payload_too_large', 'copy_in', { device: 'alpha:gpu0', path: 'mcp-over.bin', contentBase64: over }),
    /at most 16 MiB/,
  );
  await refusedWith(client, 'bad_request', 'copy_in', { device: 'alpha:gpu0', path: '/etc/passwd', contentBase64: 'aGk=' });
  await refusedWith(client, 'not_found', 'copy_out', { device: 'alpha:gpu0', path: 'mcp-none.bin' });

  // Busy: the held device, without queueing; nothing can ever match: refused at once.
  const busy = await refusedWith(client, 'busy', 'hold', { device: 'alpha:gpu0', ttlS: 60, wait: false });
  assert.match(busy, /alpha:gpu0 is busy/);
  await refusedWith(client, 'no_matching_device', 'hold', { selector: 'vram>=4000G', ttlS: 60 });

  const ps = await use<{ jobs: Job[]; counts: { running: number } }>(client, 'ps', {});
  assert.ok(ps.jobs.some((j) => j.id === id && j.state === 'running'));
  const extended = await use<{ job: Job }>(client, 'extend', { job: id, ttlS: 3600 });
  assert.ok(Date.parse(extended.job.expiresAt!) > firstEnd + 2000_000, 'the hold now ends an hour from now');
  const released = await use<{ job: Job }>(client, 'release', { job: id });
  assert.equal(released.job.id, id);
  const w = await use<{ ended: boolean; job: Job }>(client, 'wait', { job: id, timeoutS: 30 });
  assert.equal(w.ended, true);

  const jobs = await use<{ jobs: Job[] }>(client, 'jobs', { kind: 'hold', mine: true, since: '1h' });
  assert.ok(jobs.jobs.some((j) => j.id === id));
  assert.equal((await use<{ jobs: Job[] }>(client, 'jobs', { state: 'running', kind: 'hold' })).jobs.length, 0);
  const usage = await use<{ rows: { key: string; holdsS: number }[] }>(client, 'usage', { since: '1h' });
  assert.ok(usage.rows.length > 0);
  const byHost = await use<{ by: string; rows: { key: string }[] }>(client, 'usage', { since: '1h', by: 'host' });
  assert.deepEqual([byHost.by, byHost.rows.map((r) => r.key)], ['host', ['alpha']]);
  await refusedWith(client, 'bad_request', 'usage', { since: 'yesterday-ish' });
  await client.close();
  // Each call is audited as mcp.<tool>, with what it was asked (a file's size, not its bytes).
  const audit = (await stack.api('GET', '/api/audit?action=mcp.*&limit=500', undefined, stack.adminToken)).body as {
    entries: { action: string; target: string | null; origin: string; detail: Record<string, unknown> | null }[];
  };
  for (const action of ['mcp.hold', 'mcp.copy_in', 'mcp.copy_out', 'mcp.extend', 'mcp.release', 'mcp.ps', 'mcp.jobs', 'mcp.usage', 'mcp.read_sheet'])
    assert.ok(
      audit.entries.some((e) => e.action === action && / via mcp$/.test(e.origin)),
      action,
    );
  assert.ok(audit.entries.some((e) => e.action === 'mcp.release' && e.target === id));
  const copied = audit.entries.filter((e) => e.action === 'mcp.copy_in');
  assert.ok(copied.length >= 2);
  for (const e of copied) assert.ok(!('contentBase64' in (e.detail ?? {})) && typeof e.detail?.bytes === 'number', 'a size, never the bytes');
  await allFree();
});

test("over a limit, another's job, a bound token acting as another name: tool errors with rc's code", async () => {
  await allFree();
  const limited = await clientToken('mcp-limited');
  assert.equal((await stack.api('PUT', '/api/admin/limits/token:mcp-limited', { maxHoldTtl: '10m' }, stack.adminToken)).status, 200);
  const a = await connect(limited);
  const over = await refusedWith(a, 'over_limit', 'hold', { selector: '', ttlS: 3600 });
  assert.match(over, /at most 10m/);
  const held = await use<{ job: Job }>(a, 'hold', { ttlS: 60 });
  await refusedWith(a, 'over_limit', 'extend', { job: held.job.id, ttlS: 3600 });
  await use(a, 'release', { job: held.job.id });
  await a.close();

  const bound = await clientToken('mcp-bound', 'claude/');
  const b = await connect(bound);
  const me = await use<{ job: Job }>(b, 'run', { argv: ['sleep', '60'] });
  assert.equal(me.job.submitter, 'claude/mcp', "a prefix-bound token's default name");
  await refusedWith(b, 'forbidden', 'run', { argv: ['true'], submitter: 'someone-else' });
  await refusedWith(b, 'forbidden', 'kill', { job: me.job.id, submitter: 'someone-else' });
  // Another submitter's job: not this agent's to stop.
  const theirs = (await stack.api('POST', '/api/jobs', { argv: ['sleep', '60'], submitter: 'alice' })).body as { job: Job };
  await refusedWith(b, 'not_job_owner', 'kill', { job: theirs.job.id });
  await use(b, 'kill', { job: me.job.id });
  assert.equal((await stack.api('POST', `/api/jobs/${theirs.job.id}/kill`, { submitter: 'alice' })).status, 200);
  await b.close();
  await allFree();
});

test('the admin tools: a client token has none to call; an admin turns a host off and on', async () => {
  await allFree();
  const client = await connect();
  const r = await call(client, 'host_off', { host: 'alpha' });
  assert.equal(r.isError, true);
  assert.match(r.content[0]!.text, /host_off not found/);
  await client.close();
  assert.ok(!(await stack.devices()).some((d) => d.state === 'off'), 'nothing was turned off');

  const admin = await connect(stack.adminToken);
  const off = await use<{ host: { name: string; off: { reason: string | null } | null }; already: boolean }>(admin, 'host_off', {
    host: 'alpha',
    reason: 'mcp test',
  });
  assert.deepEqual([off.host.name, off.host.off?.reason, off.already], ['alpha', 'mcp test', false]);
  assert.ok((await stack.devices()).every((d) => d.state === 'off'));
  const on = await use<{ already: boolean }>(admin, 'host_on', { host: 'alpha' });
  assert.equal(on.already, false);
  await refusedWith(admin, 'not_found', 'host_on', { host: 'nohost' });
  await admin.close();
  await allFree();
});

test('50 MCP sessions at once, each whoami and list_devices: all answered', async () => {
  const one = async () => {
    const client = await connect();
    const [who, devices] = await Promise.all([use<{ name: string }>(client, 'whoami'), use<{ devices: unknown[] }>(client, 'list_devices')]);
    await client.close();
    return [who.name, devices.devices.length] as const;
  };
  const answers = await Promise.all(Array.from({ length: 50 }, one));
  assert.equal(answers.length, 50);
  for (const [name, n] of answers) assert.deepEqual([typeof name, n], ['string', 2]);
});

test("a session initialized at one controller goes on at another of the fleet's (stateless: no session to lose)", async () => {
  const other = await Stack.start({ workers: [], databaseUrl: stack.dbUrl });
  try {
    // The endpoint keeps no session (server/mcp/endpoint.ts): any controller answers any request as the first would.
    let target = stack.controllerUrl;
    const seen = new Set<string>();
    const via: typeof fetch = (url, init) => {
      const moved = new URL(String(url instanceof Request ? url.url : url));
      const to = new URL(target);
      moved.host = to.host;
      seen.add(to.host);
      return fetch(moved, init);
    };
    const client = await connect(stack.clientToken, via);
    target = other.controllerUrl;
    const who = await use<{ kind: string }>(client, 'whoami');
    assert.equal(who.kind, 'client');
    const ran = await use<{ job: Job }>(client, 'run', { argv: ['sh', '-c', 'exit 4'] });
    const w = await use<{ ended: boolean; job: Job }>(client, 'wait', { job: ran.job.id, timeoutS: 30 });
    assert.deepEqual([w.ended, w.job.exitCode], [true, 4], "the other controller's job ran on the first's worker");
    assert.equal(seen.size, 2, 'requests went to both controllers');
    await client.close();
  } finally {
    await other.stop();
  }
});
