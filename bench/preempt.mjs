// Preemption with notice (issue 15), timed with real processes: a
// --preemptible job that ignores SIGTERM holds the only device; a normal job
// is submitted. Measured per round: submit → the victim's SIGTERM; the notice
// it was given (the deadline in $RC_PREEMPT_FILE − the SIGTERM); the deadline
// → the victim's end (the SIGKILL, as the worker reports it); the deadline →
// the normal job's start.
//   npm run bench:preempt [-- --rounds 5 --notice 2]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { report, startFleet, until } from '../scripts/bench-fleet.mjs';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, notice: { type: 'string', default: '2' } } });
const rounds = Number(values.rounds);
const notice = Number(values.notice);
if (!Number.isInteger(rounds) || rounds < 1 || rounds > 100) throw new Error('--rounds: 1 to 100');
if (!Number.isInteger(notice) || notice < 1 || notice > 60) throw new Error('--notice: 1 to 60 seconds');

const rc = await startFleet({ localWorker: true, env: { RC_FAKE_DEVICES: '1', RC_PREEMPT_NOTICE_S: String(notice) } });
const api = async (method, path, body) => {
  const r = await fetch(rc.controller + path, {
    method,
    headers: { authorization: `Bearer ${rc.clientToken}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return r.json();
};
const job = async (id) => (await api('GET', `/api/jobs/${id}`)).job;

const out = mkdtempSync(join(tmpdir(), 'rc-bench-preempt-'));
const toTerm = [];
const given = [];
const killLate = [];
const startLate = [];
try {
  for (let i = 0; i < rounds; i++) {
    const mark = join(out, `term-${i}`);
    // On SIGTERM it writes when (ms since the epoch) and the notice file's deadline, then carries on: only SIGKILL ends it.
    const script = `trap 'echo "$(date +%s%3N) $(cat "$RC_PREEMPT_FILE")" > ${mark}' TERM; while :; do sleep 0.05; done`;
    const victim = (await api('POST', '/api/jobs', { argv: ['sh', '-c', script], submitter: 'bench', preemptible: true })).job;
    await until(async () => (await job(victim.id)).state === 'running', 'the victim to run');
    // Let its shell set the trap.
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    const normal = (await api('POST', '/api/jobs', { argv: ['true'], submitter: 'bench' })).job;
    await until(
      async () => {
        try {
          return readFileSync(mark, 'utf8').includes(' ');
        } catch {
          return false;
        }
      },
      'the SIGTERM',
      30_000,
    );
    const [termAt, deadlineText] = readFileSync(mark, 'utf8').trim().split(' ');
    const deadline = Date.parse(deadlineText);
    await until(async () => (await job(normal.id)).state === 'succeeded', 'the normal job to end', (notice + 30) * 1000);
    const v = await job(victim.id);
    const n = await job(normal.id);
    if (v.state !== 'preempted') throw new Error(`the victim ended ${v.state}, not preempted`);
    toTerm.push(Number(termAt) - t0);
    given.push(deadline - Number(termAt));
    killLate.push(Date.parse(v.endedAt) - deadline);
    startLate.push(Date.parse(n.startedAt) - deadline);
  }
  console.log(`${rounds} preemptions, notice RC_PREEMPT_NOTICE_S=${notice}, host runtime, one controller:`);
  report('submit → the victim gets SIGTERM', toTerm);
  report('notice given (deadline − SIGTERM)', given);
  report('deadline → the victim ends (SIGKILL)', killLate);
  report('deadline → the normal job starts', startLate);
} finally {
  rmSync(out, { recursive: true, force: true });
  await rc.stop();
}
