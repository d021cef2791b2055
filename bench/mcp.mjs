// What a `run` + `wait` round trip for `true` costs through MCP (issue 35),
// against `rc run -- true`, on a throw-away fleet (one controller, its local
// worker), interleaved so a noisy moment on the machine weighs on all alike:
//   - MCP over HTTP: the SDK's client, already connected to the controller's
//     /mcp (Streamable HTTP): tools/call run, then tools/call wait;
//   - MCP over stdio: the SDK's client, already connected to `rc mcp` (the
//     Node CLI, and the standalone one where it is built), which forwards each
//     message to /mcp: the same two calls;
//   - `rc run -- true`, the Node CLI and the standalone one: a process started
//     per job, as an agent's shell runs it (NODE_EXTRA_CA_CERTS as this shell has it);
//   - once per round, what an agent harness pays to start the bridge: `rc mcp`
//     started and initialize answered.
// Each round's job is checked: exit code 0.
// Usage: npm run bench:mcp [-- --runs 30]
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { report, root, startFleet, until } from '../scripts/bench-fleet.mjs';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '30' } } });
const RUNS = Number(values.runs);
const fleet = await startFleet({ localWorker: true });
const { controller, clientToken } = fleet;
const env = { ...process.env, RC_CONTROLLER: controller, RC_TOKEN: clientToken, RC_SUBMITTER: 'bench' };
const rcNode = join(root, 'dist/rc.cjs');
const standalone = join(root, 'dist', 'cli', `rc-${process.platform}-${process.arch}`);
const hasStandalone = existsSync(standalone);
const clients = [];

try {
  console.log(
    `machine: ${process.env.NODE_EXTRA_CA_CERTS ? 'NODE_EXTRA_CA_CERTS is set (node loads extra CA certificates at every start)' : 'no NODE_EXTRA_CA_CERTS'}; node ${process.version}`,
  );
  await until(
    async () =>
      (await (await fetch(`${controller}/api/devices`, { headers: { authorization: `Bearer ${clientToken}` } })).json()).devices?.some(
        (d) => d.state === 'free',
      ),
    'a free device',
  );

  const http = await connected(
    new StreamableHTTPClientTransport(new URL(`${controller}/mcp`), { requestInit: { headers: { authorization: `Bearer ${clientToken}` } } }),
  );
  const stdioNode = await connected(stdio(process.execPath, [rcNode, 'mcp']));
  const stdioStandalone = hasStandalone ? await connected(stdio(standalone, ['mcp'])) : null;

  const cases = [
    { name: 'MCP over HTTP: run + wait (connected)', fn: () => roundTrip(http) },
    { name: 'MCP over stdio, Node rc mcp: run + wait', fn: () => roundTrip(stdioNode) },
    ...(stdioStandalone ? [{ name: 'MCP over stdio, standalone rc mcp: run + wait', fn: () => roundTrip(stdioStandalone) }] : []),
    { name: 'Node rc run -- true', fn: () => cli(process.execPath, [rcNode, 'run', '--', 'true']) },
    ...(hasStandalone ? [{ name: 'standalone rc run -- true', fn: () => cli(standalone, ['run', '--', 'true']) }] : []),
    { name: 'Node rc mcp: start + initialize', fn: () => startBridge(process.execPath, [rcNode, 'mcp']) },
    ...(hasStandalone ? [{ name: 'standalone rc mcp: start + initialize', fn: () => startBridge(standalone, ['mcp']) }] : []),
  ];
  const times = cases.map(() => []);
  // The first round warms every path up and is not counted.
  for (let i = 0; i <= RUNS; i++) {
    for (const [j, c] of cases.entries()) {
      const t = performance.now();
      await c.fn();
      if (i > 0) times[j].push(performance.now() - t);
    }
  }
  console.log(`\n\`true\` on the local worker, ${RUNS} rounds, interleaved (the first round not counted)`);
  for (const [j, c] of cases.entries()) report(c.name, times[j]);
  if (!hasStandalone) console.log('standalone rc: not built (no Bun binary in node_modules)');
} finally {
  for (const c of clients) await c.close().catch(() => {});
  await fleet.stop();
}

function stdio(command, args) {
  return new StdioClientTransport({ command, args, env, stderr: 'inherit' });
}

async function connected(transport) {
  const client = new Client({ name: 'bench-mcp', version: '1' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** run, then wait until it ends: the job's exit code must be 0. */
async function roundTrip(client) {
  const ran = await client.callTool({ name: 'run', arguments: { argv: ['true'] } });
  if (ran.isError) throw new Error(`run: ${ran.content[0].text}`);
  let w;
  do {
    w = await client.callTool({ name: 'wait', arguments: { job: ran.structuredContent.job.id, timeoutS: 30 } });
    if (w.isError) throw new Error(`wait: ${w.content[0].text}`);
  } while (!w.structuredContent.ended);
  if (w.structuredContent.job.exitCode !== 0) throw new Error(`the job ended with ${w.structuredContent.job.exitCode}`);
}

function cli(command, args) {
  const r = spawnSync(command, args, { env });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
}

async function startBridge(command, args) {
  const client = new Client({ name: 'bench-mcp', version: '1' });
  await client.connect(stdio(command, args));
  await client.close();
}
