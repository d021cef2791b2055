// Compiles the CLI, the controller and the worker with esbuild (well under a
// second), so nothing is transpiled at run time. The dashboard is built by Next.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildStandalone } from './build-standalone.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const common = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  target: 'node20',
  define: { RC_VERSION: JSON.stringify(version), RC_STANDALONE: 'false' },
  logLevel: 'warning',
  legalComments: 'none',
};

await Promise.all([
  // The CLI is one self-contained CommonJS file: no module resolution at start-up.
  build({ ...common, entryPoints: ['cli/main.ts'], outfile: 'dist/rc.cjs', format: 'cjs', minifySyntax: true }),
  // rc run --tty's terminal client, with socket.io-client: loaded by rc.cjs only for --tty.
  build({ ...common, entryPoints: ['cli/tty.ts'], outfile: 'dist/rc-tty.cjs', format: 'cjs', minifySyntax: true, external: ['bufferutil', 'utf-8-validate'] }),
  // The standalone CLI's source (scripts/build-standalone.mjs compiles it with Bun): the terminal client built in.
  build({
    ...common,
    entryPoints: ['cli/main.ts'],
    outfile: 'dist/rc-standalone.cjs',
    format: 'cjs',
    minifySyntax: true,
    define: { ...common.define, RC_STANDALONE: 'true' },
    external: ['bufferutil', 'utf-8-validate'],
  }),
  build({ ...common, entryPoints: ['server.ts'], outfile: 'dist/server.js', format: 'esm', packages: 'external', sourcemap: true }),
  build({ ...common, entryPoints: ['worker/main.ts'], outfile: 'dist/worker.js', format: 'esm', packages: 'external', sourcemap: true }),
  // The fleet simulator (bench/simulator): a command, and a module for scripts (npm run demo).
  build({ ...common, entryPoints: ['bench/simulator/cli.ts'], outfile: 'dist/simulator.js', format: 'esm', packages: 'external', sourcemap: true }),
  // scripts/gpu-check.ts: what the worker sees on a real GPU host (npm run gpu-check there).
  build({ ...common, entryPoints: ['scripts/gpu-check.ts'], outfile: 'dist/gpu-check.cjs', format: 'cjs' }),
  build({ ...common, entryPoints: ['test/support.ts'], outfile: 'dist/test-support.js', format: 'esm', packages: 'external' }),
  // The worker as a host installs it (server/worker-package.ts): one file with its dependencies, node-pty beside it.
  build({
    ...common,
    entryPoints: ['worker/main.ts'],
    outfile: 'dist/worker-package/rc-worker.cjs',
    format: 'cjs',
    external: ['node-pty', 'bufferutil', 'utf-8-validate'],
  }),
]);

const standalone = await buildStandalone(version);
if (standalone) console.log(`build: ${standalone}`);
