// rc jobs, rc ps, rc logs, rc attach: finding jobs and reading their output.
import { idleText } from '../../core/idle';
import { formatDuration } from '../../core/duration';
import { EXIT } from '../../core/exit-codes';
import type { JobsQuery, JobView, PsEntry, PsPage } from '../../protocol/wire';
import type { Client } from '../client';
import { intFlag, parseFlags, stringFlag } from '../flags';
import { age, errLine, json, out, shortCommand, table, usage } from '../output';
import { follow, reattachTty } from './run';
import { JOB_ID } from '../../core/job-options';

/** The id of the job `ref` names: an id as it is, a name (rc run --name) looked up once, so that a reconnect follows the same job. */
async function jobIdOf(client: Client, ref: string): Promise<string> {
  return JOB_ID.test(ref) ? ref : (await client.call('GET /api/jobs/:id', { id: ref })).job.id;
}

/** What a job runs, as the tables show it: a hold runs nothing. */
function what(j: JobView): string {
  return j.kind === 'hold' ? '(hold)' : j.kind === 'tty' ? `(terminal) ${shortCommand(j.argv, 38)}` : shortCommand(j.argv, 50);
}

/** A running hold's time left, or the job's --max-runtime. */
function limit(j: JobView, now = Date.now()): string {
  if (j.kind === 'hold') {
    if (!j.expiresAt) return 'ttl';
    const left = Math.max(0, Math.round((Date.parse(j.expiresAt) - now) / 1000));
    return `${formatDuration(left)} left`;
  }
  return j.maxRuntimeS ? formatDuration(j.maxRuntimeS) : '-';
}

export const JOBS_HELP = `usage: rc jobs [--state s1,s2] [--device host:gpuN] [--submitter name] [--limit n] [--json]

Current and past jobs across the fleet, newest first (50 by default).
States: queued, running, succeeded, failed, killed, lost, cancelled.
`;

export async function jobs(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'jobs',
    args,
    [
      { name: 'state', type: 'string' },
      { name: 'device', short: 'd', type: 'string' },
      { name: 'submitter', type: 'string' },
      { name: 'limit', type: 'string' },
      { name: 'json', type: 'boolean' },
      { name: 'help', short: 'h', type: 'boolean' },
    ],
    false,
  );
  if (parsed.flags.has('help')) {
    out(JOBS_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length) usage(`rc jobs takes no arguments (got ${parsed.rest[0]}); filter with --state, --device, --submitter`);
  const query: JobsQuery = {};
  for (const k of ['state', 'device', 'submitter', 'limit'] as const) query[k] = stringFlag(parsed, k);
  const body = await client.call('GET /api/jobs', { query });
  if (parsed.flags.has('json')) {
    json(body);
    return EXIT.ok;
  }
  out(
    table(
      ['JOB', 'STATE', 'EXIT', 'DEVICE', 'SUBMITTER', 'CREATED', 'NAME', 'COMMAND'],
      body.jobs.map((j) => [
        j.id,
        j.state + (j.reason && j.state !== 'failed' ? ` (${j.reason})` : '') + attemptNote(j),
        j.exitCode === null ? '-' : String(j.exitCode),
        (j.devices ?? []).join(',') || j.device || '-',
        j.submitter,
        `${age(j.createdAt)} ago`,
        j.name ?? '-',
        what(j),
      ]),
    ),
  );
  return EXIT.ok;
}

/** A job run more than once: which attempt this is, and how each earlier one ended. */
export function attemptNote(j: JobView): string {
  if (j.attempt <= 1) return '';
  const earlier = (j.attempts ?? []).map((a) => `${a.attempt}: ${a.state}${a.reason ? `, ${a.reason}` : ''}`).join('; ');
  return ` [attempt ${j.attempt}${earlier ? `; ${earlier}` : ''}]`;
}

export const PS_HELP = `usage: rc ps [--limit n | --all] [--json]

What is running and queued now, whose it is, and each queued job's position
(0 is next). Running jobs come first; queued jobs are listed in the order
they will be considered. The table shows the first 500 (--limit n: the
first n; --all: every one) and says on stderr how many more there are.
--json lists every one unless --limit is given.
`;

/** Jobs asked for per request: the API's largest page. */
const PS_PAGE = 5000;

/** The first `want` jobs of GET /api/ps (null: all of them), a page at a time. */
async function psJobs(client: Client, want: number | null): Promise<PsPage> {
  const jobs: PsEntry[] = [];
  let page: PsPage;
  let after: string | undefined;
  do {
    const limit = want === null ? PS_PAGE : Math.min(PS_PAGE, want - jobs.length);
    page = await client.call('GET /api/ps', { query: { limit: String(limit), after } });
    jobs.push(...page.jobs);
    after = page.next ?? undefined;
  } while (after !== undefined && (want === null || jobs.length < want));
  // A controller from before pages (rc upgraded first) answers every job, with neither counts nor next: all are shown.
  const counts = page.counts ?? { running: jobs.filter((j) => j.state === 'running').length, queued: jobs.filter((j) => j.state === 'queued').length };
  return { jobs, counts, next: page.next ?? null };
}

export async function ps(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'ps',
    args,
    [
      { name: 'limit', type: 'string' },
      { name: 'all', type: 'boolean' },
      { name: 'json', type: 'boolean' },
      { name: 'help', short: 'h', type: 'boolean' },
    ],
    false,
  );
  if (parsed.flags.has('help')) {
    out(PS_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length) usage('rc ps takes no arguments');
  const first = intFlag(parsed, 'limit', 1, 1_000_000);
  const all = parsed.flags.has('all');
  if (all && first !== undefined) usage('rc ps takes --limit or --all, not both');
  const asJson = parsed.flags.has('json');
  const body = await psJobs(client, all || (asJson && first === undefined) ? null : (first ?? 500));
  if (asJson) {
    json(body);
    return EXIT.ok;
  }
  out(
    table(
      ['JOB', 'STATE', 'WHERE', 'SUBMITTER', 'FOR', 'LIMIT', 'NAME', 'COMMAND', 'GPU'],
      body.jobs.map((j) => [
        j.id,
        (j.state === 'queued' ? (j.position === null ? 'waiting' : `queued #${j.position}`) : j.state) + (j.attempt > 1 ? ` (attempt ${j.attempt})` : ''),
        j.state === 'queued' ? queuedWhere(j) + (j.waits ? ` (${j.waits})` : '') : (j.devices ?? []).join(','),
        j.submitter,
        age(j.startedAt ?? j.createdAt),
        limit(j),
        j.name ?? '-',
        what(j),
        // Its GPUs' idleness (core/idle.ts): idle 42m, busy, or no GPU signal (a CPU slot).
        j.state === 'running' ? idleText(j.idleS, formatDuration) + (j.idleWarned ? ' (warned)' : '') : '-',
      ]),
    ),
  );
  if (body.next !== null) {
    const { running, queued } = body.counts;
    const more = running + queued - body.jobs.length;
    errLine(
      `rc: ${more > 0 ? more : 'more'} not shown (${running} running, ${queued} queued in all): rc ps --all lists every one, rc ps --limit <n> the first n`,
    );
  }
  return EXIT.ok;
}

export const LOGS_HELP = `usage: rc logs [-f|--follow] <job-id|name>

Prints the job's stored output (stdout to stdout, stderr to stderr) and exits.
With -f, replays it and then follows new output until the job ends; Ctrl-C
stops following without touching the job. A name (rc run --name) stands for
the one queued or running job with it, else the one job ever given it.
`;

export async function logs(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'logs',
    args,
    [
      { name: 'follow', short: 'f', type: 'boolean' },
      { name: 'help', short: 'h', type: 'boolean' },
    ],
    false,
  );
  if (parsed.flags.has('help')) {
    out(LOGS_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length !== 1) usage('rc logs takes one job id or name: rc logs [-f] <job-id|name>');
  const id = await jobIdOf(client, parsed.rest[0]!);
  const res = await client.stream('GET /api/jobs/:id/stream', { id, query: { follow: parsed.flags.has('follow') ? '1' : undefined } });
  const code = await follow(client, res, { detachOnInterrupt: true, knownJobId: id, reconnect: parsed.flags.has('follow') });
  return code === EXIT.unreachable ? code : EXIT.ok;
}

export const ATTACH_HELP = `usage: rc attach <job-id|name>

Re-streams a job's output from the beginning and follows it until it ends,
then exits as rc run would (the command's exit code). Ctrl-C detaches; the
job keeps running. A running terminal (rc run --tty) is re-attached instead:
its recent screen is replayed and your keys go to it again. A name stands for
a job as in rc logs.
`;

export async function attach(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags('attach', args, [{ name: 'help', short: 'h', type: 'boolean' }], false);
  if (parsed.flags.has('help')) {
    out(ATTACH_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length !== 1) usage('rc attach takes one job id or name: rc attach <job-id|name>');
  const { job } = await client.call('GET /api/jobs/:id', { id: parsed.rest[0]! });
  const id = job.id;
  if (job.kind === 'tty' && (job.state === 'running' || job.state === 'queued')) return reattachTty(client, id);
  const res = await client.stream('GET /api/jobs/:id/stream', { id, query: { follow: '1' } });
  return follow(client, res, { detachOnInterrupt: true, knownJobId: id });
}

/** Where a queued job may go, as rc ps shows it: -d, or its --gpu choices and selector. */
function queuedWhere(j: Pick<JobView, 'device' | 'selector' | 'gpuChoices'>): string {
  if (j.device) return j.device;
  const parts = [j.gpuChoices && `gpu ${j.gpuChoices}`, j.selector].filter(Boolean);
  return parts.join(' ') || 'any device';
}
