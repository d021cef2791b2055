// rc <command> --json against a real stack: every command that prints is run
// with --json and its stdout parsed with its schema from protocol/cli-json.ts
// (strict: a field the schema does not name fails); a followed job's lines are
// NDJSON ending in its exit; errors under --json are one object on stderr with
// the exit code they have without it. Then finding things: rc jobs --name,
// --since, --mine and --limit, rc logs --tail (with -f too), each flag's bad
// input refused before anything is sent, and the API's new query parameters
// validated and closed to the wrong credentials.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { z } from 'zod';
import {
  ArraySubmittedSchema,
  CopiedFileSchema,
  DeviceDescriptionSchema,
  DeviceListSchema,
  ExplanationSchema,
  JobListSchema,
  JsonArrayExitSchema,
  JsonErrorSchema,
  JsonExitSchema,
  JsonHoldLineSchema,
  JsonNoticeSchema,
  JsonStreamLineSchema,
  OneArraySchema,
  OneJobSchema,
  PsPageSchema,
  SubmittedSchema,
  UsageReportSchema,
  WhoamiSchema,
} from '../../protocol/cli-json';
import { Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 2 }] });
});
after(async () => stack.stop());

/** stdout as one JSON document, parsed with `schema`; nothing on stderr. */
function one<S extends z.ZodType>(schema: S, r: { code: number | null; stdout: string; stderr: string }, what: string): z.infer<S> {
  assert.equal(r.code, 0, `${what}: ${r.stderr}`);
  assert.equal(r.stderr, '', what);
  return schema.parse(JSON.parse(r.stdout), { reportInput: true }) as z.infer<S>;
}

/** stdout as NDJSON, each line parsed with `schema`. */
function lines<S extends z.ZodType>(schema: S, stdout: string): z.infer<S>[] {
  assert.ok(stdout.endsWith('\n'), 'every line ends');
  return stdout
    .slice(0, -1)
    .split('\n')
    .map((l) => schema.parse(JSON.parse(l)) as z.infer<S>);
}

/** What a followed job printed, put back together: each stream's text, and that its offsets run on without a gap. */
function streams(ls: z.infer<typeof JsonStreamLineSchema>[]): { stdout: string; stderr: string } {
  const text = { stdout: '', stderr: '' };
  for (const l of ls) {
    if (l.type !== 'output') continue;
    assert.equal(l.offset, Buffer.byteLength(text[l.stream]), `${l.stream} offset`);
    text[l.stream] += l.data;
  }
  return text;
}

test('rc run --json: NDJSON lines, each of its schema, ending in the exit; rc exits with the command’s code', async () => {
  const r = await stack.cli(['run', '--json', '--name', 'jsonrun', '--', 'sh', '-c', 'echo out; echo err >&2; printf "é"; exit 3']);
  assert.equal(r.code, 3, r.stderr);
  assert.equal(r.stderr, '');
  const ls = lines(JsonStreamLineSchema, r.stdout);
  assert.deepEqual(
    ls.map((l) => l.type).filter((t) => t !== 'output'),
    ['queued', 'started', 'exit'],
  );
  const exit = ls.at(-1)!;
  assert.ok(exit.type === 'exit');
  assert.deepEqual({ state: exit.state, exitCode: exit.exitCode, cause: exit.cause }, { state: 'failed', exitCode: 3, cause: 'exit' });
  assert.deepEqual(streams(ls), { stdout: 'out\né', stderr: 'err\n' });
  assert.equal(ls[0]!.type === 'queued' && ls[0]!.job, exit.job);

  // rc logs --json gives the same lines of a job that has ended, less its queued and started; rc wait --json its exit.
  const logged = lines(JsonStreamLineSchema, (await stack.cli(['logs', '--json', exit.job])).stdout);
  assert.deepEqual(logged, ls.slice(2));
  const waited = one(JsonExitSchema, { ...(await stack.cli(['wait', '--json', exit.job])), code: 0 }, 'wait');
  assert.deepEqual(waited, exit);
  assert.equal((await stack.cli(['wait', '--json', exit.job])).code, 3, 'rc wait --json exits with the code too');
  one(OneJobSchema, await stack.cli(['describe', exit.job, '--json']), 'describe a job');
});

test('rc run --detach, --explain, rc describe, devices, ps, jobs, kill, attach, usage, whoami, cp: each --json parses with its schema', async () => {
  const submitted = one(SubmittedSchema, await stack.cli(['run', '--detach', '--json', '--name', 'sleeper', '--', 'sleep', '30']), 'run --detach');
  const id = submitted.job.id;
  assert.equal(submitted.job.name, 'sleeper');
  await stack.waitFor(async () => (await stack.job(id)).state === 'running', 'the job to start');
  one(ExplanationSchema, await stack.cli(['run', '--explain', '--json', '--gpu', 'H100:1']), 'run --explain --gpu');
  one(ExplanationSchema, await stack.cli(['run', '--json', '--explain', '-s', 'vram>=1G']), 'run --explain');
  const devices = one(DeviceListSchema, await stack.cli(['devices', '--json']), 'devices');
  assert.equal(devices.devices.length, 2);
  one(DeviceDescriptionSchema, await stack.cli(['describe', 'alpha:gpu0', '--json']), 'describe a device');
  const ps = one(PsPageSchema, await stack.cli(['ps', '--json']), 'ps');
  assert.ok(ps.jobs.some((j) => j.id === id));
  one(JobListSchema, await stack.cli(['jobs', '--json']), 'jobs');
  one(UsageReportSchema, await stack.cli(['usage', '--json']), 'usage');
  one(UsageReportSchema, await stack.cli(['usage', '--json', 'tester']), 'usage of one key');
  one(WhoamiSchema, await stack.cli(['whoami', '--json']), 'whoami');

  // rc attach --json follows the job's lines to its exit as rc kill --json answers with the job.
  const attached = stack.cli(['attach', '--json', id]);
  const killed = one(OneJobSchema, await stack.cli(['kill', '--json', id]), 'kill');
  assert.equal(killed.job.id, id);
  const a = await attached;
  assert.equal(a.code, 143, a.stderr);
  const exit = lines(JsonStreamLineSchema, a.stdout).at(-1)!;
  assert.ok(exit.type === 'exit' && exit.state === 'killed' && exit.job === id);

  const local = mkdtempSync(join(tmpdir(), 'rc-json-cp-'));
  writeFileSync(join(local, 'in.txt'), 'hello\n');
  const up = one(CopiedFileSchema, await stack.cli(['cp', '--json', join(local, 'in.txt'), 'alpha:gpu0:/workspace/']), 'cp up');
  assert.deepEqual(up, { from: join(local, 'in.txt'), to: 'alpha:gpu0:/workspace/in.txt', bytes: 6 });
  const down = one(CopiedFileSchema, await stack.cli(['cp', 'alpha:gpu0:/workspace/in.txt', join(local, 'out.txt'), '--json']), 'cp down');
  assert.deepEqual(down, { from: 'alpha:gpu0:/workspace/in.txt', to: join(local, 'out.txt'), bytes: 6 });
  assert.equal(readFileSync(join(local, 'out.txt'), 'utf8'), 'hello\n');
});

test('rc hold --json: its lines as they happen; rc hold extend --json and rc release --json answer with the hold', async () => {
  let seen = '';
  const held = stack.cli(['hold', '--json', '--ttl', '1h', '-d', 'alpha:gpu1'], {
    onSpawn: (c) => c.stdout!.on('data', (d: Buffer) => (seen += d.toString())),
  });
  await stack.waitFor(() => seen.includes('"started"'), 'the hold to start');
  const [queued, started] = lines(JsonHoldLineSchema, seen);
  assert.ok(queued?.type === 'queued' && started?.type === 'started');
  assert.deepEqual(started.devices, ['alpha:gpu1']);
  assert.ok(started.expiresAt && Date.parse(started.expiresAt) > Date.now() + 3500_000, 'it holds until an hour from now');
  const extended = one(OneJobSchema, await stack.cli(['hold', 'extend', started.job, '--ttl', '2h', '--json']), 'hold extend');
  assert.ok(Date.parse(extended.job.expiresAt!) > Date.now() + 7100_000);
  one(OneJobSchema, await stack.cli(['release', '--json', started.job]), 'release');
  const r = await held;
  assert.equal(r.code, 0, r.stderr);
  // Under --json stderr is JSON too: nothing but notices here.
  for (const l of r.stderr.split('\n').filter(Boolean)) JsonNoticeSchema.parse(JSON.parse(l));
  const ls = lines(JsonHoldLineSchema, r.stdout);
  assert.deepEqual(
    ls.map((l) => l.type),
    ['queued', 'started', 'exit'],
  );
  assert.ok(ls[2]!.type === 'exit' && ls[2]!.state === 'killed');
});

test('errors under --json: one error object on stderr, nothing on stdout, the exit code as without --json', async () => {
  for (const [args, code, errCode] of [
    [['jobs', '--json', '--since', 'soon'], 2, 'usage'],
    [['jobs', '--json', '--bogus'], 2, 'usage'],
    [['kill', 'j0000000000', '--json'], 208, 'not_found'],
    [['wait', '--json', 'j0000000000'], 208, 'not_found'],
    [['logs', '--json', '--tail', 'x', 'j0000000000'], 2, 'usage'],
    [['run', '--json', '--no-wait', '-s', 'nosuchlabel=1', '--', 'true'], 201, 'no_matching_device'],
    [['run', '--json', '--tty'], 2, 'usage'],
    [['hold', '--json'], 2, 'usage'],
    [['nosuchcommand', '--json'], 2, 'usage'],
  ] as const) {
    const r = await stack.cli([...args]);
    assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '', args.join(' '));
    const e = JsonErrorSchema.parse(JSON.parse(r.stderr));
    assert.equal(e.error.code, errCode, args.join(' '));
    assert.ok(!e.error.message.startsWith('rc:'), 'the sentence alone');
    // Without --json, the same error in words (rc run --tty would open a terminal).
    if ((args as readonly string[]).includes('--tty')) continue;
    const plain = await stack.cli(args.filter((a) => a !== '--json'));
    assert.equal(plain.code, code);
    assert.match(plain.stderr, new RegExp(`^rc: ${errCode}: `));
  }
  // A --json that belongs to the job's command is not rc's.
  const r = await stack.cli(['run', '--', 'echo', '--json']);
  assert.deepEqual([r.code, r.stdout], [0, '--json\n']);
});

test('rc jobs --name, --since, --mine, --limit find jobs; bad values are refused before anything is sent', async () => {
  const made = await stack.api('POST', '/api/admin/tokens', { name: 'other-agent' }, stack.adminToken);
  assert.equal(made.status, 201);
  const other = (made.body as { token: string }).token;
  const mineId = JSON.parse((await stack.cli(['run', '--detach', '--json', '--name', 'findme', '--', 'true'])).stdout).job.id as string;
  const theirs = await stack.cli(['run', '--detach', '--json', '--name', 'findme', '--', 'true'], { env: { RC_TOKEN: other } });
  const theirId = JSON.parse(theirs.stdout).job.id as string;
  const ids = async (...args: string[]) => one(JobListSchema, await stack.cli(['jobs', '--json', ...args]), args.join(' ')).jobs.map((j) => j.id);

  assert.deepEqual(await ids('--name', 'findme'), [theirId, mineId]);
  assert.deepEqual(await ids('--name', 'findme', '--mine'), [mineId]);
  assert.ok(!(await ids('--mine')).includes(theirId), '--mine: only this token’s jobs');
  assert.deepEqual(await ids('--name', 'findme', '--limit', '1'), [theirId]);
  assert.deepEqual(await ids('--name', 'findme', '--since', '1h'), [theirId, mineId]);
  assert.deepEqual(await ids('--name', 'findme', '--since', new Date(Date.now() + 60_000).toISOString()), []);
  assert.deepEqual(await ids('--name', 'findme', '--since', '2000-01-01'), [theirId, mineId]);
  assert.deepEqual(await ids('--name', 'nosuchname'), []);
  // The table says the same.
  const table = await stack.cli(['jobs', '--name', 'findme', '--mine']);
  assert.match(table.stdout, new RegExp(mineId));
  assert.doesNotMatch(table.stdout, new RegExp(theirId));

  const before = (await stack.api('GET', '/api/jobs?limit=1000')).body as { jobs: unknown[] };
  for (const [args, message] of [
    [['--since', 'soon'], /--since takes a duration back from now/],
    [['--since', '0s'], /--since/],
    [['--since', '400d'], /--since/],
    [['--name', 'no spaces'], /--name: /],
    [['--limit', '0'], /--limit must be a whole number from 1 to 1000/],
    [['--limit', '1001'], /--limit/],
    [['--mine=1'], /--mine takes no value/],
    [['stray'], /rc jobs takes no arguments/],
  ] as const) {
    const r = await stack.cli(['jobs', ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message, args.join(' '));
    assert.equal(r.stdout, '');
  }
  const afterwards = (await stack.api('GET', '/api/jobs?limit=1000')).body as { jobs: unknown[] };
  assert.equal(afterwards.jobs.length, before.jobs.length, 'nothing was submitted');
});

test('GET /api/jobs: since and mine are validated (400 with a sentence, never 500) and need a client token; mine is the caller’s own', async () => {
  for (const q of ['since=soon', 'since=2026-13-01', 'since=0s', 'mine=yes', 'mine=', 'limit=x']) {
    const r = await stack.api('GET', `/api/jobs?${q}`);
    assert.equal(r.status, q === 'mine=' ? 200 : 400, q);
    if (r.status === 400) {
      const e = r.body as { error: { code: string; message: string } };
      assert.equal(e.error.code, 'bad_request', q);
      assert.match(e.error.message, /^(since|mine|limit)/, q);
    }
  }
  assert.equal((await stack.api('GET', '/api/jobs?mine=1', undefined, null)).status, 401);
  assert.equal((await stack.api('GET', '/api/jobs?mine=1', undefined, 'not-a-token')).status, 401);
  assert.equal((await stack.api('GET', '/api/jobs?mine=1', undefined, stack.hostCredential('alpha'))).status, 403);
  // An admin's mine=1 is the admin token's jobs: none here.
  const admin = await stack.api('GET', '/api/jobs?mine=1', undefined, stack.adminToken);
  assert.deepEqual([admin.status, (admin.body as { jobs: unknown[] }).jobs], [200, []]);
  // The stream's tail likewise.
  const id = JSON.parse((await stack.cli(['run', '--detach', '--json', '--', 'true'])).stdout).job.id as string;
  for (const q of ['tail=-1', 'tail=x', 'tail=100001', 'tail=1&after=2']) {
    const r = await stack.api('GET', `/api/jobs/${id}/stream?${q}`);
    assert.equal(r.status, 400, q);
    assert.match((r.body as { error: { message: string } }).error.message, /^tail/, q);
  }
  assert.equal((await stack.api('GET', `/api/jobs/${id}/stream?tail=1`, undefined, stack.hostCredential('alpha'))).status, 403);
});

test('rc logs --tail n: the last n lines (--json with their offsets); with -f it then follows; bad n is a usage error', async () => {
  const script = 'for i in 1 2 3 4 5; do echo line$i; done; echo warn >&2; echo line6';
  const r = await stack.cli(['run', '--json', '--', 'sh', '-c', script]);
  const id = lines(JsonStreamLineSchema, r.stdout)[0]!;
  assert.ok(id.type === 'queued');
  const tail = async (...args: string[]) => stack.cli(['logs', ...args, id.job]);
  const t2 = await tail('--tail', '2');
  assert.deepEqual([t2.code, t2.stdout, t2.stderr], [0, 'line6\n', 'warn\n']);
  assert.equal((await tail('--tail', '3')).stdout, 'line5\nline6\n');
  assert.equal((await tail('--tail', '100')).stdout, 'line1\nline2\nline3\nline4\nline5\nline6\n');
  assert.deepEqual([(await tail('--tail', '0')).stdout, (await tail('--tail', '0')).stderr], ['', '']);
  const ls = lines(JsonStreamLineSchema, (await tail('--tail', '2', '--json')).stdout);
  // stdout and stderr are read apart: which of the two came first is not known.
  assert.deepEqual(
    ls.filter((l) => l.type === 'output').sort((a, b) => (a.type === 'output' && b.type === 'output' ? a.stream.localeCompare(b.stream) : 0)),
    [
      { type: 'output', stream: 'stderr', offset: 0, data: 'warn\n' },
      { type: 'output', stream: 'stdout', offset: 'line1\n'.length * 5, data: 'line6\n' },
    ],
  );
  assert.equal(ls.at(-1)!.type, 'exit');

  // -f --tail: the last lines, then what comes, to the end.
  const d = JSON.parse((await stack.cli(['run', '--detach', '--json', '--', 'sh', '-c', 'echo a; echo b; sleep 1; echo c'])).stdout).job.id as string;
  await stack.waitFor(async () => (await stack.cli(['logs', d])).stdout === 'a\nb\n', 'the first lines');
  const f = await stack.cli(['logs', '-f', '--tail', '1', d]);
  assert.deepEqual([f.code, f.stdout], [0, 'b\nc\n']);

  for (const bad of ['-1', 'x', '100001', '1.5']) {
    const b = await tail('--tail', bad);
    assert.equal(b.code, 2, bad);
    assert.match(b.stderr, /^rc: usage: --tail must be a whole number from 0 to 100000/, bad);
  }
});

test('rc run --array, rc describe, rc wait and rc kill of an array: each --json parses with its schema', async () => {
  const submitted = one(
    ArraySubmittedSchema,
    await stack.cli(['run', '--array', '0-2', '--detach', '--json', '--', 'sh', '-c', 'exit $RC_ARRAY_INDEX']),
    'run --array --detach',
  );
  const id = submitted.array.id;
  assert.equal(submitted.array.size, 3);
  // Task 1 exits 1 and task 2 exits 2: the array exits as its lowest-index failure, task 1.
  const waited = await stack.cli(['wait', id, '--json']);
  assert.equal(waited.code, 1, waited.stderr);
  const end = JsonArrayExitSchema.parse(JSON.parse(waited.stdout), { reportInput: true });
  assert.equal(end.exitCode, 1);
  assert.equal(end.array.firstFailure?.index, 1);
  assert.equal(one(OneArraySchema, await stack.cli(['describe', id, '--json']), 'describe an array').array.counts.succeeded, 1);
  // A followed array: one array-exit line, no progress text.
  const followed = await stack.cli(['run', '--array', '0-1', '--json', '--', 'true']);
  assert.equal(followed.code, 0, followed.stderr);
  assert.equal(JsonArrayExitSchema.parse(JSON.parse(followed.stdout)).exitCode, 0);
  assert.equal(followed.stderr, '');
  const sleepers = one(ArraySubmittedSchema, await stack.cli(['run', '--array', '0-3%1', '--detach', '--json', '--', 'sleep', '30']), 'run --array %1');
  const killed = one(OneArraySchema, await stack.cli(['kill', sleepers.array.id, '--json']), 'kill an array');
  assert.equal(killed.array.id, sleepers.array.id);
});
