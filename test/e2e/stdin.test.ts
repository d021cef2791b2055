// rc run's standard input reaches the job when it is a pipe or a file (as
// with srun and ssh), its end is the job's end of file, a slow reader holds
// rc back, a command that stops reading stops the sending; --no-stdin, a
// terminal-less /dev/null and holds read nothing. And the route's bad input
// and wrong credentials.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

let stack: Stack;
const dir = mkdtempSync(join(tmpdir(), 'rc-stdin-'));
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 2 }] });
});
after(async () => stack.stop());

/** `rc run` with `input` on its stdin (a pipe), as `printf ... | rc run ...` gives it. */
function runWithInput(
  args: string[],
  input: Buffer | null,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: Buffer; stderr: string }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, '..', '..', 'dist', 'rc.cjs'), 'run', ...args], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      RC_CONTROLLER: stack.controllerUrl,
      RC_TOKEN: stack.clientToken,
      RC_SUBMITTER: 'tester',
      ...env,
    } as unknown as NodeJS.ProcessEnv,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.on('error', () => {});
  if (input) child.stdin.end(input);
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out), stderr });
    }),
  );
}

test('a piped stdin reaches the job, and its end is the job’s end of file', async () => {
  const r = await runWithInput(['--', 'wc', '-l'], Buffer.from('one\ntwo\nthree\n'));
  assert.deepEqual([r.code, r.stdout.toString().trim(), r.stderr], [0, '3', '']);
  // git diff | rc run -- git apply, in miniature: a patch applied from stdin in the workspace.
  const ws = stack.workspaceOf('alpha');
  writeFileSync(join(ws, 'greeting.txt'), 'hello\n');
  const patch = '--- a/greeting.txt\n+++ b/greeting.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n';
  const applied = await runWithInput(['--', 'sh', '-c', 'patch -p1 >/dev/null && cat greeting.txt'], Buffer.from(patch));
  assert.deepEqual([applied.code, applied.stdout.toString(), applied.stderr], [0, 'hello, world\n', '']);
});

test('megabytes of binary stdin arrive byte for byte, in order, through a slow reader', async () => {
  const data = randomBytes(5 * 1024 * 1024 + 123);
  const want = createHash('sha256').update(data).digest('hex');
  // The reader sleeps first: the pipe fills, and rc must wait for it rather than lose or reorder anything.
  const r = await runWithInput(['--', 'sh', '-c', 'sleep 1; sha256sum | cut -d" " -f1'], data);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.toString().trim(), want);
});

test('a command that stops reading (head -c) ends, and rc exits with its code without hanging on the rest', async () => {
  const r = await runWithInput(['--', 'head', '-c', '5'], randomBytes(8 * 1024 * 1024));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.length, 5);
  assert.equal(r.stderr, '');
});

test('--no-stdin, /dev/null and a file: the job reads nothing, nothing, and the file', async () => {
  const none = await runWithInput(['--no-stdin', '--', 'sh', '-c', 'cat; echo end'], Buffer.from('not for the job\n'));
  assert.deepEqual([none.code, none.stdout.toString()], [0, 'end\n']);
  const file = join(dir, 'input.txt');
  writeFileSync(file, 'from a file\n');
  const fromFile = await stack.cli(['run', '--', 'sh', '-c', `cat`], { stdinFile: file });
  assert.deepEqual([fromFile.code, fromFile.stdout], [0, 'from a file\n']);
  const devNull = await stack.cli(['run', '--', 'sh', '-c', 'cat; echo end']);
  assert.deepEqual([devNull.code, devNull.stdout], [0, 'end\n']);
});

test('the stdin route: only the submitter, only a job with a piped stdin, only in order; bad input refused', async () => {
  // A job that waits for its input: its stdin stays open until the test sends the end.
  const r = runWithInput(['--', 'sh', '-c', 'cat > /dev/null; echo done'], null);
  let id = '';
  await stack.waitFor(async () => {
    const ps = (await stack.api('GET', '/api/ps')).body as { jobs: { id: string; state: string }[] };
    id = ps.jobs.find((j) => j.state === 'running')?.id ?? '';
    return id !== '';
  }, 'the job to run');
  const post = (query: string, body: Buffer = Buffer.alloc(0), token: string = stack.clientToken) =>
    fetch(`${stack.controllerUrl}/api/jobs/${id}/stdin?${query}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
      body: new Uint8Array(body),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as { error?: { code: string; message: string }; closed?: boolean } }));
  const cases: [string, Buffer | undefined, string | undefined, number, string, RegExp][] = [
    ['submitter=someone-else&offset=0', undefined, undefined, 403, 'not_job_owner', /only its submitter writes its stdin/],
    ['submitter=tester', undefined, undefined, 400, 'bad_request', /offset/],
    ['submitter=tester&offset=-1', undefined, undefined, 400, 'bad_request', /offset/],
    ['submitter=tester&offset=0&eof=yes', undefined, undefined, 400, 'bad_request', /eof/],
    ['offset=0', undefined, undefined, 400, 'bad_request', /submitter/],
    ['submitter=tester&offset=7', Buffer.from('x'), undefined, 409, 'conflict', /at byte 0, not 7/],
    ['submitter=tester&offset=0', Buffer.alloc(1024 * 1024 + 1), undefined, 413, 'payload_too_large', /at most 1048576 bytes/],
    ['submitter=tester&offset=0', undefined, 'nonsense', 401, 'unauthorized', /./],
  ];
  for (const [query, body, token, status, code, message] of cases) {
    const res = await post(query, body, token);
    assert.equal(res.status, status, `${query}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error?.code, code, query);
    assert.match(res.body.error!.message, message, query);
  }
  // A host's credential is not a client's.
  const host = await post('submitter=tester&offset=0', undefined, stack.hostCredential('alpha'));
  assert.equal(host.status, 403);
  // In order it is taken, and the end ends the job's cat.
  assert.deepEqual((await post('submitter=tester&offset=0', Buffer.from('abc'))).body, { closed: false });
  assert.deepEqual((await post('submitter=tester&offset=3&eof=1')).body, { closed: false });
  // A job submitted without stdin: refused by name.
  const plain = (await stack.api('POST', '/api/jobs', { argv: ['sleep', '5'], submitter: 'tester' })).body as { job: { id: string } };
  const other = await fetch(`${stack.controllerUrl}/api/jobs/${plain.job.id}/stdin?submitter=tester&offset=0`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.clientToken}` },
  });
  assert.equal(other.status, 409);
  assert.match(((await other.json()) as { error: { message: string } }).error.message, /not submitted with a piped standard input/);
  await stack.cli(['kill', plain.job.id]);
  // A hold runs no command: stdin is refused at submit.
  const hold = await stack.api('POST', '/api/jobs', { kind: 'hold', ttlS: 60, submitter: 'tester', stdin: true });
  assert.equal(hold.status, 400);
  const done = await r;
  assert.deepEqual([done.code, done.stdout.toString()], [0, 'done\n']);
});
