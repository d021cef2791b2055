// docs/agents.md cannot drift from the product: every ```sh block in it is run
// here, in order, by bash with the real `rc` on PATH, against a real stack.
// A block's exit code (and, where the page annotates it, its message) is checked:
//   <!-- expect exit=N stderr="..." stdout="..." -->   before a block
//   <!-- setup=alice-holds-gpu1 ... -->                 someone else holds gpubox:gpu1 first
//   <!-- tty input="..." ... -->                         the block is typed into, as a terminal would
// The page's placeholders (the controller URL and token of the setup block) are
// replaced by the stack's; $LAST_JOB and $OTHERS_JOB are job ids made here.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fakeNvidiaSmiDir } from '../helpers/fake-nvidia-smi';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');
const PAGE = readFileSync(join(ROOT, 'docs', 'agents.md'), 'utf8');

interface Block {
  code: string;
  line: number;
  exit: number;
  stderr: string | null;
  stdout: string | null;
  setup: string | null;
  ttyInput: string | null;
}

/** The page's ```sh blocks with the annotation just above each. */
export function blocks(page: string): Block[] {
  const out: Block[] = [];
  const re = /(?:<!--([^\n]*?)-->\n)?```sh\n([\s\S]*?)```/g;
  for (let m = re.exec(page); m; m = re.exec(page)) {
    const note = m[1] ?? '';
    const field = (name: string) => {
      const f = new RegExp(`${name}="((?:[^"\\\\]|\\\\.)*)"`).exec(note);
      return f ? f[1]!.replace(/\\n/g, '\n').replace(/\\"/g, '"') : null;
    };
    out.push({
      code: m[2]!,
      line: page.slice(0, m.index).split('\n').length + (m[1] ? 1 : 0),
      exit: Number(/exit=(\d+)/.exec(note)?.[1] ?? 0),
      stderr: field('stderr'),
      stdout: field('stdout'),
      setup: /setup=([\w-]+)/.exec(note)?.[1] ?? null,
      ttyInput: /\btty\b/.test(note) ? (field('input') ?? '') : null,
    });
  }
  return out;
}

let stack: Stack;
const work = mkdtempSync(join(tmpdir(), 'rc-agent-'));
const bin = mkdtempSync(join(tmpdir(), 'rc-agent-bin-'));
const env: Record<string, string> = {};
const aliceHolds: ChildProcess[] = [];

before(async () => {
  stack = await Stack.start({ workers: [] });
  const probes = mkdtempSync(join(tmpdir(), 'rc-agent-probes-'));
  writeFileSync(join(probes, 'ecc'), '#!/bin/sh\necho "gpu0.health=failing: 12 uncorrectable ECC errors"\n');
  chmodSync(join(probes, 'ecc'), 0o755);
  const smi = `${fakeNvidiaSmiDir()}:${process.env.PATH}`;
  await stack.startWorker('gpubox', 2, { PATH: smi });
  await stack.startWorker('gpubox-b', 2, { PATH: smi, RC_PROBES_DIR: probes });
  await stack.waitFor(async () => (await stack.devices()).find((d) => d.name === 'gpubox-b:gpu0')?.state === 'unhealthy', 'gpubox-b:gpu0 to be quarantined');
  const sheet = '# gpubox: shared training box\n\nDatasets are in /data. Scratch is /scratch, wiped on Sundays.\n';
  await stack.api('PUT', '/api/hosts/gpubox/sheet', { body: sheet }, stack.adminToken);
  const scripts: Record<string, string> = {
    'train.py': 'import sys\nprint("training", " ".join(sys.argv[1:]))\n',
    'prep.py': 'print("prepared")\n',
    'eval.py': 'print("evaluated")\n',
  };
  for (const dir of [work, join(stack.dataDir, 'ws-gpubox'), join(stack.dataDir, 'ws-gpubox-b')]) {
    mkdirSync(dir, { recursive: true });
    for (const [name, body] of Object.entries(scripts)) writeFileSync(join(dir, name), body);
  }
  writeFileSync(join(stack.dataDir, 'ws-gpubox', 'out.json'), '{"loss": 0.1}\n');
  writeFileSync(join(bin, 'rc'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'dist', 'rc.cjs')}" "$@"\n`);
  chmodSync(join(bin, 'rc'), 0o755);
  const mine = await stack.cli(['run', '--', 'echo', 'done'], { env: { RC_SUBMITTER: 'agent' } });
  const others = await stack.cli(['run', '--', 'echo', 'theirs'], { env: { RC_SUBMITTER: 'alice' } });
  assert.equal(mine.code, 0);
  assert.equal(others.code, 0);
  const ids = ((await stack.api('GET', '/api/jobs?limit=2')).body as { jobs: { id: string; submitter: string }[] }).jobs;
  Object.assign(env, {
    PATH: `${bin}:${process.env.PATH}`,
    HOME: process.env.HOME ?? '/root',
    RC_CONTROLLER: stack.controllerUrl,
    RC_TOKEN: stack.clientToken,
    RC_SUBMITTER: 'agent',
    LAST_JOB: ids.find((j) => j.submitter === 'agent')!.id,
    OTHERS_JOB: ids.find((j) => j.submitter === 'alice')!.id,
  });
});
after(async () => {
  for (const c of aliceHolds) c.kill('SIGKILL');
  await stack.stop();
});

async function setup(name: string): Promise<void> {
  assert.equal(name, 'alice-holds-gpu1', `unknown setup ${name}`);
  if ((await stack.devices()).find((d) => d.name === 'gpubox:gpu1')?.holder) return;
  let out = '';
  void stack.cli(['hold', '-d', 'gpubox:gpu1', '--ttl', '5m'], {
    env: { RC_SUBMITTER: 'alice' },
    timeoutMs: 300_000,
    onSpawn: (c) => {
      aliceHolds.push(c);
      c.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
      });
    },
  });
  await stack.waitFor(() => out.includes('\n'), 'alice to hold gpubox:gpu1');
}

function runBlock(b: Block): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const code = b.code.replaceAll('http://rc.internal.example:8080', stack.controllerUrl).replaceAll('rc_c_your-client-token', stack.clientToken);
  const child = spawn('bash', ['-e', '-c', code], { cwd: work, env: env as unknown as NodeJS.ProcessEnv, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  if (b.ttyInput !== null) {
    // Typed a line at a time, as a person would, once the shell is up.
    setTimeout(() => child.stdin!.end(b.ttyInput), 1500);
  } else child.stdin!.end();
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  }, 60_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      // Whatever the block left in the background goes with it.
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        /* gone */
      }
      resolve({ code, stdout, stderr });
    }),
  );
}

test('docs/agents.md: every command example runs as the page says', async () => {
  const all = blocks(PAGE);
  assert.ok(all.length >= 20, `only ${all.length} examples found`);
  const codes = new Set<number>();
  for (const b of all) {
    if (b.setup) await setup(b.setup);
    if (!b.setup && b.ttyInput === null) {
      // Each example starts from a fleet where nothing of the agent's is left running.
      await stack.waitFor(async () => !(await stack.devices()).some((d) => d.holder && d.name !== 'gpubox:gpu1'), 'the devices to be free', 20_000);
    }
    const r = await runBlock(b);
    const where = `docs/agents.md line ${b.line}:\n${b.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
    assert.equal(r.code, b.exit, where);
    if (b.stderr) assert.ok(r.stderr.includes(b.stderr), `stderr lacks ${JSON.stringify(b.stderr)}: ${where}`);
    if (b.stdout) assert.ok(r.stdout.includes(b.stdout), `stdout lacks ${JSON.stringify(b.stdout)}: ${where}`);
    codes.add(b.exit);
  }
  // Every exit code in the page's table has a run example, but `lost` (a worker dying; test/e2e/lifecycle covers it).
  const table = [...PAGE.matchAll(/^\| `rc: [^|]*\| (\d{3}) \|/gm)].map((m) => Number(m[1]));
  for (const c of table) if (c !== 205) assert.ok(codes.has(c), `the table lists exit ${c}, but no example shows it`);
});
