// npm test: type-check, build, start a throw-away embedded Postgres with a
// migrated template database, then run every test with Node's test runner.
// Tests clone the template (CREATE DATABASE ... TEMPLATE), so each starts clean.
import { spawnSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { descendants } from './proc-tree.mjs';

const root = new URL('..', import.meta.url).pathname;
const step = (name, cmd, args) => {
  const t = Date.now();
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`npm test: ${name} failed`);
    process.exit(r.status ?? 1);
  }
  console.log(`npm test: ${name} ok (${((Date.now() - t) / 1000).toFixed(1)}s)`);
};

// RC_TEST_SKIP_TYPECHECK=1 is for quick local runs of a few files; CI always lints, checks the format and type-checks.
if (process.env.RC_TEST_SKIP_TYPECHECK !== '1') {
  step('lint and format', process.execPath, [join(root, 'node_modules/@biomejs/biome/bin/biome'), 'ci', '--colors=off', '.']);
  step('typecheck', process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', '.']);
}
step('build', process.execPath, [join(root, 'scripts/build.mjs')]);

const { startEmbeddedPostgres } = await import('../dist/test-support.js');
const { connect, runMigrations } = await import('../dist/test-support.js');
const dir = mkdtempSync(join(tmpdir(), 'rc-test-pg-'));
const port = await freePort();
const pg = await startEmbeddedPostgres(dir, port);
const admin = connect(pg.url, 1);
await admin.client.unsafe('create database rc_template');
const templateUrl = pg.url.replace(/\/postgres$/, '/rc_template');
const template = connect(templateUrl, 2);
await runMigrations(template);
await template.close();
await admin.close();

// Node 20's runner takes files, not folders or globs: collect them here.
const files = (process.argv.length > 2 ? process.argv.slice(2) : ['test']).flatMap((p) => testFiles(join(root, p)));
// No --test-force-exit: with it, Node 20 drops a file's last results when it exits (nodejs/node#64833; here the
// last 13 tests of test/unit/selector.test.ts went unreported, the count fell from 663 to 650, and the run stayed
// green). A file that leaves a socket or a timer open would hang the run instead: one that reports nothing for
// QUIET_LIMIT_MS is stopped, and the run fails, rather than waiting for CI's limit.
const QUIET_LIMIT_MS = 5 * 60_000;
// Test files at once (RC_TEST_CONCURRENCY, default 2): each file starts its own controllers, workers, databases
// and browsers on ports the OS gives, and waits for conditions, so two files share these 2 cores without seeing
// each other (the full suite: 15.5 min one file at a time, 9.3 min two at a time; two at a time beside
// stress-ng --cpu 3 at a load average of 6 to 8: 9.7 min).
const concurrency = Number(process.env.RC_TEST_CONCURRENCY ?? 2);
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(`npm test: RC_TEST_CONCURRENCY is the number of test files run at once (1 or more), not ${process.env.RC_TEST_CONCURRENCY}`);
  process.exit(2);
}
const args = ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files];
const child = spawn(process.execPath, args, {
  cwd: root,
  stdio: ['ignore', 'pipe', 'pipe'],
  detached: true,
  env: { ...process.env, RC_TEST_PG_URL: pg.url },
});
// In a group of its own (so a hang is stopped whole): a Ctrl-C of npm test stops it too.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    try {
      process.kill(-child.pid, signal);
    } catch {}
  });
}
let heardAt = Date.now();
child.stdout.on('data', (c) => {
  heardAt = Date.now();
  process.stdout.write(c);
});
child.stderr.on('data', (c) => {
  heardAt = Date.now();
  process.stderr.write(c);
});
let hung = false;
const watch = setInterval(() => {
  if (Date.now() - heardAt < QUIET_LIMIT_MS) return;
  hung = true;
  console.error(
    `npm test: nothing reported for ${QUIET_LIMIT_MS / 60_000} minutes: a test file is hanging (a socket, timer or process left open?); stopping the run`,
  );
  // Which file, and what it still runs: each test file is a process of its own under the runner.
  console.error('npm test: what was still running (pid, command line):');
  for (const { pid, depth, cmd } of descendants(child.pid)) console.error(`  ${'  '.repeat(depth)}${pid} ${cmd.slice(0, 200)}`);
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {}
}, 5_000);
const code = await new Promise((resolve) => child.on('close', (c) => resolve(hung ? 1 : (c ?? 1))));
clearInterval(watch);
await pg.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(code);

function testFiles(path) {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((f) => {
      const full = join(path, f);
      return statSync(full).isDirectory() ? testFiles(full) : f.endsWith('.test.ts') ? [full] : [];
    });
}

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
