// The CLI does not wait forever, nor read without end. A controller that
// accepts connections and never answers (frozen) is left for the next one in
// RC_CONTROLLER, and alone fails the command with `no_answer` and exit 207
// within its budget; an answer far bigger than any controller sends fails with
// `answer_too_large`, and the CLI's memory stays bounded while it reads it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { EXIT } from '../../core/exit-codes';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
/** The answer budget the tests give the CLI. */
const ANSWER_MS = 1500;

let stack: Stack;
/** Accepts, reads, says nothing: a frozen controller as a client sees one. */
let hang = '';
const held: Socket[] = [];
const silent = createTcpServer((socket) => {
  held.push(socket);
  socket.on('error', () => {});
});

before(async () => {
  stack = await Stack.start({ workers: [] });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  hang = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
});
after(async () => {
  for (const s of held) s.destroy();
  silent.close();
  await stack?.stop();
});

const deadlines = { RC_ANSWER_TIMEOUT_MS: String(ANSWER_MS), RC_CONNECT_TIMEOUT_MS: '1500' };

/** The Node CLI, and the standalone one (Bun's fetch, cli/fetch-request.ts) where this build made it. */
const STANDALONE = join(ROOT, 'dist', 'cli', `rc-${process.platform}-${process.arch}`);
const clis: [string, string | undefined][] = [
  ['rc', undefined],
  ['the standalone rc', existsSync(STANDALONE) ? STANDALONE : undefined],
];

for (const [name, rc] of clis) {
  const skip = rc === undefined && name !== 'rc' ? `no ${STANDALONE}` : false;

  test(`${name}, given a controller that hangs and a good one, moves on to the good one`, { skip, timeout: 60_000 }, async () => {
    const t0 = Date.now();
    const r = await stack.cli(['ps'], { env: { RC_CONTROLLER: `${hang},${stack.controllerUrl}`, ...deadlines }, timeoutMs: 30_000, rc });
    const took = Date.now() - t0;
    assert.equal(r.code, 0, r.stderr);
    assert.ok(took >= ANSWER_MS && took < 2 * ANSWER_MS + 10_000, `rc ps took ${took} ms`);
    console.log(`# ${name} ps past a hung controller: ${took} ms (answer timeout ${ANSWER_MS} ms)`);
  });

  test(`${name}, given a controller that hangs alone: no_answer and exit 207 within the budget`, { skip, timeout: 60_000 }, async () => {
    const t0 = Date.now();
    const r = await stack.cli(['ps'], { env: { RC_CONTROLLER: hang, ...deadlines }, timeoutMs: 30_000, rc });
    const took = Date.now() - t0;
    assert.equal(r.code, EXIT.unreachable, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(`^rc: no_answer: the controller at ${hang} took the request but did not answer within ${ANSWER_MS} ms \\(RC_ANSWER_TIMEOUT_MS\\)`),
    );
    assert.ok(took >= ANSWER_MS && took < 2 * ANSWER_MS + 10_000, `rc ps took ${took} ms`);
  });
}

test('a request that changes something is not sent again to the next controller: it may yet be carried out by the first', { timeout: 60_000 }, async () => {
  const r = await stack.cli(['kill', 'j0000000000'], { env: { RC_CONTROLLER: `${hang},${stack.controllerUrl}`, ...deadlines }, timeoutMs: 30_000 });
  assert.equal(r.code, EXIT.unreachable, r.stderr);
  assert.match(r.stderr, /^rc: no_answer: .* may or may not have taken effect/);
});

test('a bad RC_ANSWER_TIMEOUT_MS is a usage error that names it', async () => {
  const r = await stack.cli(['ps'], { env: { RC_ANSWER_TIMEOUT_MS: 'soon' } });
  assert.equal(r.code, EXIT.usage, r.stderr);
  assert.match(r.stderr, /^rc: bad_env: RC_ANSWER_TIMEOUT_MS must be a whole number/);
});

test('a 300 MB answer: answer_too_large, with the CLI never holding much more than the bound', { timeout: 120_000 }, async () => {
  const piece = Buffer.alloc(1024 * 1024, 'a');
  let sent = 0;
  let stopped = false;
  // Written as the client reads it: the stand-in itself holds one piece.
  const big = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"jobs":"');
    const more = () => {
      while (sent < 300 && !stopped) {
        sent += 1;
        if (!res.write(piece)) return void res.once('drain', more);
      }
      res.end('"}');
    };
    more();
    res.on('close', () => {
      stopped = true;
    });
  });
  await new Promise<void>((r) => big.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${(big.address() as { port: number }).port}`;
    // GNU time's %M: the CLI's peak resident memory, in KiB, on the last line of stderr.
    const child = spawn('/usr/bin/time', ['-f', 'peak-kib %M', process.execPath, join(ROOT, 'dist', 'rc.cjs'), 'ps'], {
      env: { PATH: process.env.PATH, RC_CONTROLLER: url, RC_TOKEN: 'x', RC_SUBMITTER: 'tester', RC_MAX_ANSWER_MIB: '64' } as unknown as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const code = await new Promise<number | null>((r) => child.on('close', r));
    clearTimeout(killer);
    assert.equal(code, EXIT.error, stderr);
    assert.match(stderr, /^rc: answer_too_large: the answer from http:\/\/127\.0\.0\.1:\d+ is over 64 MiB \(RC_MAX_ANSWER_MIB\)/);
    const peakMiB = Number(/peak-kib (\d+)/.exec(stderr)?.[1]) / 1024;
    console.log(`# rc ps reading a 300 MB answer: peak RSS ${peakMiB.toFixed(0)} MiB (bound 64 MiB); the stand-in sent ${sent} MiB`);
    assert.ok(peakMiB < 250, `peak RSS ${peakMiB} MiB`);
  } finally {
    big.closeAllConnections();
    big.close();
  }
});
