// No terminal injection: text other people can put in front of you (a usage
// sheet, a device note, a declared label, a submitter, a job's reason or
// command) reaches your terminal with its control characters shown, never
// obeyed; through a pipe or --json it stays byte for byte; a job's own output
// is never touched; and the controller refuses submitter names that carry
// controls. The CLI runs under a real pseudo-terminal (node-pty) here.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as pty from 'node-pty';
import postgres from 'postgres';
import { guardPtyEnd } from '../../worker/pty-end';
import { Stack } from '../helpers/stack';

const ROOT = join(import.meta.dirname, '..', '..');

/** Each hostile piece, and how a terminal must show it (docs/cli.md's forms: \xHH for C0, DEL and C1; \uHHHH for bidi controls). */
const PIECES: [raw: string, shown: string][] = [
  ['\x1b]0;pwned\x07', '\\x1b]0;pwned\\x07'], // the window title
  ['\x1b[2J\x1b[H', '\\x1b[2J\\x1b[H'], // clear the screen
  ['\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\', '\\x1b]8;;http://evil\\x1b\\link\\x1b]8;;\\x1b\\'], // an OSC 8 link
  ['\x1b[8mhidden\x1b[0m', '\\x1b[8mhidden\\x1b[0m'], // hidden text
  ['\u009b2J\u009d0;c1\u009c', '\\x9b2J\\x9d0;c1\\x9c'], // C1: CSI, OSC, ST
  ['\u202eexe.txt\u202c', '\\u202eexe.txt\\u202c'], // right-to-left override
  ['\u2066a\u2069\u2067b\u2069\u2068c\u2069', '\\u2066a\\u2069\\u2067b\\u2069\\u2068c\\u2069'], // bidi isolates
  ['\u202a\u202b\u202d\u200e\u200f\u061c', '\\u202a\\u202b\\u202d\\u200e\\u200f\\u061c'], // embeddings, marks
  ['x\x7f\x08\x0dy', 'x\\x7f\\x08\\x0dy'], // DEL, backspace, carriage return
];
const HOSTILE = PIECES.map(([raw]) => raw).join(' ');
const SHOWN = PIECES.map(([, shown]) => shown).join(' ');
/** A command word: JSON-quoted in tables, which escapes C0 but leaves C1 and bidi controls as they are. */
const ARGV_WORD = '\u009b2J\u202eabc\u2066';
const ARGV_SHOWN = '"\\x9b2J\\u202eabc\\u2066"';
const SHEET = `# evilbox\n\n${HOSTILE}\nsecond line\ttabbed\n`;

/** What must never reach a terminal from rc's own text: every C0 control but newline and tab, DEL, C1, bidi controls. */
const RAW_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

let stack: Stack;
let sql: postgres.Sql;
let holderJob = '';
let killedJob = '';
before(async () => {
  stack = await Stack.start({ workers: [] });
  sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  const dir = mkdtempSync(join(tmpdir(), 'rc-evil-'));
  writeFileSync(join(dir, 'worker.json'), JSON.stringify({ labels: { motd: HOSTILE }, devices: { 0: { labels: { kind: HOSTILE } } } }));
  await stack.startWorker('evilbox', 2, { RC_WORKER_CONFIG: join(dir, 'worker.json') });
  assert.equal((await stack.api('PUT', '/api/hosts/evilbox/sheet', { body: SHEET }, stack.adminToken)).status, 200);
  assert.equal((await stack.api('PUT', '/api/devices/evilbox:gpu0/note', { body: HOSTILE }, stack.adminToken)).status, 200);

  // A job killed long ago, and a running one that holds gpu0; their submitters and the reason were
  // stored before the controller refused controls in names (written here straight into the database).
  const killed = await stack.api('POST', '/api/jobs', { argv: ['sleep', '300'], device: 'evilbox:gpu1', submitter: 'tester' });
  killedJob = (killed.body as { job: { id: string } }).job.id;
  await stack.waitFor(async () => (await stack.job(killedJob)).state === 'running', 'the job to start');
  await stack.api('POST', `/api/jobs/${killedJob}/kill`, { submitter: 'tester' });
  await stack.waitFor(async () => (await stack.job(killedJob)).state === 'killed', 'the job to be killed');
  await sql`update jobs set submitter = ${HOSTILE}, reason = ${`killed by ${HOSTILE}`} where id = ${killedJob}`;

  const held = await stack.api('POST', '/api/jobs', { argv: ['sh', '-c', 'sleep 300', ARGV_WORD], device: 'evilbox:gpu0', submitter: 'tester' });
  holderJob = (held.body as { job: { id: string } }).job.id;
  await stack.waitFor(async () => (await stack.job(holderJob)).state === 'running', 'the holder to start');
  await sql`update jobs set submitter = ${HOSTILE} where id = ${holderJob}`;
  // No submit could have named it (the API refuses it): the controller's fleet in memory hears of the
  // holder when it next loads the host, here after a re-probe.
  assert.equal((await stack.api('POST', '/api/admin/hosts/evilbox/probe', {}, stack.adminToken)).status, 200);
  await stack.waitFor(async () => {
    const { devices } = (await stack.api('GET', '/api/devices')).body as { devices: { name: string; holder: { submitter: string } | null }[] };
    return devices.find((d) => d.name === 'evilbox:gpu0')?.holder?.submitter === HOSTILE;
  }, 'the holder to be seen');
});
after(async () => {
  await stack.api('POST', `/api/jobs/${holderJob}/kill`, { submitter: 'admin' }, stack.adminToken);
  await stack.waitFor(async () => (await stack.job(holderJob)).state !== 'running', 'the holder to end').catch(() => {});
  await sql.end();
  await stack.stop();
});

/** The built rc under a pseudo-terminal of our own (stdout and stderr both the terminal); lines as the program wrote them. */
function onTerminal(args: string[], env: Record<string, string> = {}): Promise<{ code: number; text: string; raw: string }> {
  const p = pty.spawn(process.execPath, [join(ROOT, 'dist', 'rc.cjs'), ...args], {
    name: 'xterm-256color',
    cols: 250,
    rows: 50,
    cwd: ROOT,
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME ?? '/root',
      RC_CONTROLLER: stack.controllerUrl,
      RC_TOKEN: stack.clientToken,
      RC_SUBMITTER: 'tester',
      ...env,
    },
  });
  guardPtyEnd(p);
  let out = '';
  p.onData((d) => {
    out += d;
  });
  // The terminal turns each \n into \r\n on its way out.
  return new Promise((resolve) => p.onExit(({ exitCode }) => resolve({ code: exitCode, text: out.replace(/\r\n/g, '\n'), raw: out })));
}

function assertNoRawControl(text: string, what: string): void {
  const m = RAW_CONTROL.exec(text);
  assert.ok(!m, m ? `${what}: a raw ${JSON.stringify(m[0])} reached the terminal: ${JSON.stringify(text.slice(Math.max(0, m.index - 60), m.index + 60))}` : '');
}

test('rc describe on a terminal: the sheet, the note, label values and submitters show their controls escaped; newlines and tabs stay', async () => {
  const r = await onTerminal(['describe', 'evilbox:gpu0']);
  assert.equal(r.code, 0, r.text);
  assertNoRawControl(r.text, 'rc describe');
  assert.match(r.text, /^evilbox:gpu0 {2}busy\n/);
  assert.ok(r.text.includes(`holder: ${SHOWN}, job ${holderJob}`), r.text);
  assert.match(r.text, new RegExp(`\n {2}kind +${escapeRe(SHOWN)} +declared`));
  assert.match(r.text, new RegExp(`\n {2}motd +${escapeRe(SHOWN)} +declared +\\d+s +host-wide`));
  assert.match(r.text, /USAGE SHEET\n {2}host-wide note, updated \d+[smh] ago by admin:/);
  assert.ok(r.text.includes(`  # evilbox\n\n  ${SHOWN}\n  second line\ttabbed\n`), `the sheet keeps its lines and tab:\n${r.text}`);
  assert.ok(r.text.includes(`DEVICE NOTE\n`) && r.text.includes(`\n  ${SHOWN}\n`), r.text);
  assert.match(
    r.text,
    new RegExp(`RECENT JOBS\n.*\n {2}${holderJob} +running +- +${escapeRe(SHOWN)} +\\d+[smh] ago +sh -c "sleep 300" ${escapeRe(ARGV_SHOWN)}`),
  );
});

test('rc devices, rc run --explain, rc ps and rc jobs on a terminal: holders, labels, reasons, submitters and commands escaped', async () => {
  const devices = await onTerminal(['devices']);
  assert.equal(devices.code, 0, devices.text);
  assertNoRawControl(devices.text, 'rc devices');
  assert.match(devices.text, new RegExp(`evilbox:gpu0 +busy +${escapeRe(SHOWN)} \\(${holderJob}\\) +- +gpu_model=none kind=${escapeRe(SHOWN)}\n`));

  const explain = await onTerminal(['run', '--explain']);
  assert.equal(explain.code, 0, explain.text);
  assertNoRawControl(explain.text, 'rc run --explain');
  assert.ok(explain.text.includes(`  match  evilbox:gpu0  busy (held by ${SHOWN}, job ${holderJob})\n`), explain.text);
  const reasons = await onTerminal(['run', '--select', 'kind=gpu', '--explain']);
  assertNoRawControl(reasons.text, 'rc run --explain with reasons');
  assert.ok(reasons.text.includes(`  no     evilbox:gpu0  kind='${SHOWN}' != gpu\n`), reasons.text);

  const ps = await onTerminal(['ps']);
  assert.equal(ps.code, 0, ps.text);
  assertNoRawControl(ps.text, 'rc ps');
  assert.match(
    ps.text,
    new RegExp(`${holderJob} +running +evilbox:gpu0 +${escapeRe(SHOWN)} +\\d+[smh] +- +- +sh -c "sleep 300" ${escapeRe(ARGV_SHOWN)} +no GPU signal\n`),
  );

  const jobs = await onTerminal(['jobs']);
  assert.equal(jobs.code, 0, jobs.text);
  assertNoRawControl(jobs.text, 'rc jobs');
  assert.match(
    jobs.text,
    new RegExp(`${killedJob} +killed \\(killed by ${escapeRe(SHOWN)}\\) +\\d+ +evilbox:gpu1 +${escapeRe(SHOWN)} +\\d+[smh] ago +- +sleep 300\n`),
  );
});

test("rc's error lines on a terminal: a message that carries someone's name shows its controls escaped", async () => {
  const r = await onTerminal(['kill', holderJob]);
  assert.equal(r.code, 209);
  assertNoRawControl(r.text, 'rc kill');
  assert.equal(r.text, `rc: not_job_owner: job ${holderJob} belongs to ${SHOWN}, not tester; leave it alone\n`);
});

test('through a pipe, and with --json, the same text stays byte for byte', async () => {
  const describe = await stack.cli(['describe', 'evilbox:gpu0']);
  assert.equal(describe.code, 0, describe.stderr);
  assert.ok(describe.stdout.includes(`holder: ${HOSTILE}, job ${holderJob}`));
  assert.ok(describe.stdout.includes(`  # evilbox\n\n  ${HOSTILE}\n  second line\ttabbed\n`));
  assert.ok(describe.stdout.includes(`DEVICE NOTE\n`) && describe.stdout.includes(`\n  ${HOSTILE}\n`));
  const json = JSON.parse((await stack.cli(['describe', 'evilbox:gpu0', '--json'])).stdout) as {
    sheet: { body: string };
    note: { body: string };
    device: { holder: { submitter: string }; labelDetails: { key: string; value: string; source: string }[] };
  };
  assert.equal(json.sheet.body, SHEET);
  assert.equal(json.note.body, HOSTILE);
  assert.equal(json.device.holder.submitter, HOSTILE);
  assert.deepEqual(
    json.device.labelDetails.filter((l) => l.source === 'declared').map((l) => l.value),
    [HOSTILE, HOSTILE],
  );

  assert.ok((await stack.cli(['devices'])).stdout.includes(`${HOSTILE} (${holderJob})`));
  assert.ok((await stack.cli(['run', '--explain'])).stdout.includes(`(held by ${HOSTILE}, job ${holderJob})`));
  assert.ok((await stack.cli(['run', '--select', 'kind=gpu', '--explain'])).stdout.includes(`kind='${HOSTILE}' != gpu`));
  const ps = await stack.cli(['ps']);
  assert.ok(ps.stdout.includes(HOSTILE) && ps.stdout.includes(JSON.stringify(ARGV_WORD)), ps.stdout);
  assert.ok((await stack.cli(['jobs'])).stdout.includes(`killed (killed by ${HOSTILE})`));
  const psJson = JSON.parse((await stack.cli(['ps', '--json'])).stdout) as { jobs: { id: string; submitter: string; argv: string[] }[] };
  assert.deepEqual(psJson.jobs.find((j) => j.id === holderJob)?.argv, ['sh', '-c', 'sleep 300', ARGV_WORD]);
  const jobsJson = JSON.parse((await stack.cli(['jobs', '--json'])).stdout) as { jobs: { id: string; submitter: string; reason: string }[] };
  const k = jobsJson.jobs.find((j) => j.id === killedJob)!;
  assert.deepEqual([k.submitter, k.reason], [HOSTILE, `killed by ${HOSTILE}`]);
  const kill = await stack.cli(['kill', holderJob]);
  assert.equal(kill.stderr, `rc: not_job_owner: job ${holderJob} belongs to ${HOSTILE}, not tester; leave it alone\n`);
});

test("a job's own output reaches the terminal byte for byte, escape sequences and all (rc run, rc logs)", async () => {
  const r = await onTerminal(['run', '-d', 'evilbox:gpu1', '--', 'printf', '%s', HOSTILE]);
  assert.equal(r.code, 0, r.text);
  assert.ok(r.raw.includes(HOSTILE), JSON.stringify(r.raw));
  const [job] = ((await stack.api('GET', '/api/jobs?device=evilbox:gpu1&limit=1')).body as { jobs: { id: string }[] }).jobs;
  const logs = await onTerminal(['logs', job!.id]);
  assert.equal(logs.code, 0);
  assert.equal(logs.raw, HOSTILE);
});

const BAD_NAMES = [
  'a\u009bb',
  'a\u0085b',
  'a\x1bb',
  'a\x7fb',
  ...['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069', '\u200e', '\u200f', '\u061c'].map((c) => `a${c}b`),
  // Invisible in a name, or a line break where a terminal does not expect one.
  ...['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u2028', '\u2029'].map((c) => `a${c}b`),
];
const WHY =
  /submitter must be printable text, without control characters \(C0, DEL, C1\), bidi controls \(U\+061C, U\+200E, U\+200F, U\+202A-U\+202E, U\+2066-U\+2069\), invisible characters \(U\+200B-U\+200D, U\+2060, U\+FEFF\) or line separators \(U\+2028, U\+2029\)/;

function assertRefused(r: { status: number; body: unknown }, what: string): void {
  assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
  const e = (r.body as { error: { code: string; message: string } }).error;
  assert.equal(e.code, 'bad_request', what);
  assert.match(e.message, WHY, what);
}

test('a submitter name with a C0, DEL, C1 or bidi control is refused with bad_request, wherever a submitter is taken', async () => {
  for (const name of BAD_NAMES) {
    const what = JSON.stringify(name);
    assertRefused(await stack.api('POST', '/api/jobs', { argv: ['true'], submitter: name }), `submit ${what}`);
    assertRefused(await stack.api('POST', '/api/jobs', { kind: 'hold', ttlS: 60, submitter: name }), `hold ${what}`);
    assertRefused(await stack.api('POST', `/api/jobs/${holderJob}/kill`, { submitter: name }), `kill ${what}`);
    assertRefused(await stack.api('POST', `/api/holds/${holderJob}/release`, { submitter: name }), `release ${what}`);
    assertRefused(await stack.api('POST', `/api/holds/${holderJob}/extend`, { submitter: name, ttlS: 60 }), `extend ${what}`);
    const files = `/api/devices/evilbox:gpu1/files?path=/workspace/x.txt&submitter=${encodeURIComponent(name)}`;
    assertRefused(await stack.api('PUT', files, 'x'), `cp up ${what}`);
    assertRefused(await stack.api('GET', files), `cp down ${what}`);
  }
  assert.equal((await stack.job(holderJob)).state, 'running', 'no refused call touched the job');

  // The terminal socket's open.
  const { io } = await import('socket.io-client');
  for (const name of ['a\u009bb', 'a\u202eb']) {
    const s = io(`${stack.controllerUrl}/tty`, { auth: { token: stack.clientToken }, transports: ['websocket'], reconnection: false });
    const answer = await new Promise<{ code: string; message: string }>((resolve) => {
      s.on('error', resolve);
      s.on('queued', () => resolve({ code: 'queued', message: '' }));
      s.on('connect', () => s.emit('open', { argv: ['true'], submitter: name, cols: 80, rows: 24 }));
    });
    s.close();
    assert.equal(answer.code, 'bad_request', JSON.stringify(name));
    assert.match(answer.message, WHY);
  }

  // Through the CLI: usage's exit code, the reason on stderr; nothing ran.
  const r = await stack.cli(['run', '--', 'true'], { env: { RC_SUBMITTER: 'me\u202etxt' } });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /^rc: bad_request: submitter: /);
  assert.match(r.stderr, WHY);

  // Names are still free text otherwise: letters of any script, spaces, punctuation.
  const ok = await stack.api('POST', '/api/jobs', { argv: ['true'], device: 'evilbox:gpu1', submitter: 'zoë 東京/s1 (\\o/)' });
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
});

test('a token name, which dashboard terminals take as their submitter (web:<name>), follows the same rule', async () => {
  for (const name of ['ops\u009b', 'ops\u202e', 'ops\x1b']) {
    const r = await stack.api('POST', '/api/admin/tokens', { name }, stack.adminToken);
    assert.equal(r.status, 400, JSON.stringify(name));
    assert.match(
      (r.body as { error: { message: string } }).error.message,
      /^name: a token name must be printable text, without control characters \(C0, DEL, C1\), bidi controls/,
    );
  }
});

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
