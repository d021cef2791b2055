// rc run --array and what takes an array's id instead of a job's: rc wait,
// rc kill, rc describe. An array is followed by its counts (GET
// /api/arrays/:id, once a second), one line each time they change, never by
// its tasks' output (rc logs <array>:<index> reads one task's).
import { ARRAY_ID } from '../../core/array-spec';
import { formatDuration } from '../../core/duration';
import { EXIT } from '../../core/exit-codes';
import { exitCodeFor } from '../../core/job-state';
import type { ArrayView, SubmitJobBody } from '../../protocol/wire';
import type { Client } from '../client';
import { age, err, json, out, shortCommand } from '../output';

/** Whether `ref` names an array (its id) rather than a job. */
export function isArrayRef(ref: string): boolean {
  return ARRAY_ID.test(ref);
}

/**
 * How an array's end is told as an exit code: 0 when every task succeeded,
 * else the code rc run gives for the lowest-index task that did not (its
 * command's own code when it failed; rc's from 200 up when rc ended it).
 */
export function arrayExitCode(a: ArrayView): number {
  return a.firstFailure ? exitCodeFor(a.firstFailure) : EXIT.ok;
}

/** One line of progress: `a0123456789: 12 of 50 done, 4 running, 34 queued, 1 failed`. */
export function progressLine(a: ArrayView): string {
  const c = a.counts;
  const ended = a.size - c.queued - c.waiting - c.running;
  const parts = [`${ended} of ${a.size} done`, `${c.running} running`, `${c.queued + c.waiting} queued`];
  for (const s of ['failed', 'killed', 'cancelled', 'lost', 'preempted'] as const) if (c[s]) parts.push(`${c[s]} ${s}`);
  return `${a.id}: ${parts.join(', ')}`;
}

/** rc run --array: submits, prints the array's id; without --detach follows it to its end. */
export async function runArray(client: Client, spec: string, job: SubmitJobBody, detach: boolean, asJson = false): Promise<number> {
  const answer = await client.call('POST /api/arrays', { body: { array: spec, job } });
  const { array, notices } = answer;
  // Under --json, err() writes each notice as a notice object; a detached array's answer is the API's.
  if (asJson && detach) json(answer);
  else for (const n of notices ?? []) err(`rc: ${n}\n`);
  if (!asJson) out(`${array.id}\n`);
  if (detach) return EXIT.ok;
  // Ctrl-C stops every task (as rc run's stops its job); a second one leaves without waiting.
  let interrupted = false;
  const onSigint = () => {
    if (interrupted) {
      process.exitCode = EXIT.interrupted;
      process.exit();
    }
    interrupted = true;
    err(`\nrc: stopping array ${array.id} (Ctrl-C again to leave without waiting)\n`);
    void client.call('POST /api/arrays/:id/kill', { id: array.id, body: { submitter: client.submitter } }).catch(() => {});
  };
  process.on('SIGINT', onSigint);
  try {
    const end = await followArray(client, array.id, null, !asJson, asJson);
    return interrupted ? EXIT.interrupted : end;
  } finally {
    process.off('SIGINT', onSigint);
  }
}

/**
 * Polls the array until every task has ended (a line on stderr each time its
 * counts change, with `progress`) and resolves to arrayExitCode; with
 * `timeoutS`, to wait_timeout once that passes.
 */
export async function followArray(client: Client, id: string, timeoutS: number | null, progress: boolean, asJson = false): Promise<number> {
  const giveUpAt = timeoutS === null ? null : Date.now() + timeoutS * 1000;
  let last = '';
  for (;;) {
    const { array } = await client.call('GET /api/arrays/:id', { id });
    const line = progressLine(array);
    if (progress && line !== last) err(`${line}\n`);
    last = line;
    if (array.done) {
      const code = arrayExitCode(array);
      // --json: the array as it ended, and the code rc exits with (docs/cli.md, "JSON output").
      if (asJson) json({ type: 'array-exit', array, exitCode: code });
      const f = array.firstFailure;
      if (progress && f)
        err(`rc: array ${id}: task ${f.index} (${f.jobId}) ${f.state}${f.reason ? `: ${f.reason}` : ''}; rc logs ${id}:${f.index} shows its output\n`);
      return code;
    }
    if (giveUpAt !== null && Date.now() >= giveUpAt) {
      err(`rc: wait_timeout: array ${id} has not ended after ${formatDuration(timeoutS!)}; it goes on (rc wait ${id} again, or rc kill ${id})\n`);
      return EXIT.wait_timeout;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** rc kill <array>. */
export async function killArrayCmd(client: Client, id: string, asJson = false): Promise<number> {
  const answer = await client.call('POST /api/arrays/:id/kill', { id, body: { submitter: client.submitter } });
  if (asJson) {
    json(answer);
    return EXIT.ok;
  }
  const { array } = answer;
  const c = array.counts;
  out(
    c.running
      ? `stopping ${array.id} (${c.running} running task${c.running === 1 ? '' : 's'})\n`
      : `${array.id}: ${progressLine(array).slice(array.id.length + 2)}\n`,
  );
  return EXIT.ok;
}

/** rc describe <array>. */
export async function describeArray(client: Client, id: string, asJson: boolean): Promise<number> {
  const body = await client.call('GET /api/arrays/:id', { id });
  if (asJson) json(body);
  else out(renderArray(body.array));
  return EXIT.ok;
}

export function renderArray(a: ArrayView, now = Date.now()): string {
  const c = a.counts;
  const lines = [
    `${a.id}${a.name ? `  ${a.name}` : ''}  ${a.done ? 'done' : 'active'}`,
    `  spec:       ${a.spec} (${a.size} task${a.size === 1 ? '' : 's'}${a.maxRunning === null ? ', no cap' : `, at most ${a.maxRunning} at once`})`,
    `  submitter:  ${a.submitter}`,
    `  command:    ${shortCommand(a.argv, 200)}`,
    `  created:    ${age(a.createdAt, now)} ago`,
    `  tasks:      ${[
      `${c.running} running`,
      `${c.queued} queued`,
      `${c.waiting} waiting`,
      ...(['succeeded', 'failed', 'killed', 'cancelled', 'lost', 'preempted'] as const).filter((s) => c[s]).map((s) => `${c[s]} ${s}`),
    ].join(', ')}`,
  ];
  if (a.firstFailure) {
    const f = a.firstFailure;
    lines.push(`  first failure: task ${f.index} (${f.jobId}) ${f.state}${f.exitCode === null ? '' : ` exit ${f.exitCode}`}${f.reason ? `: ${f.reason}` : ''}`);
  }
  lines.push(`  rc jobs --array ${a.id} lists its tasks; rc logs ${a.id}:<index> shows one's output`);
  return `${lines.join('\n')}\n`;
}
