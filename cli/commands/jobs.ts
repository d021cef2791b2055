// rc jobs, rc ps, rc logs, rc attach: finding jobs and reading their output.
import { idleText } from '../../core/idle';
import { localClock, untilShort } from '../../core/until-text';
import { placeInLine } from '../../core/queue-place';
import { formatDuration } from '../../core/duration';
import { EXIT } from '../../core/exit-codes';
import type { JobsQuery, JobView, PsEntry, PsPage } from '../../protocol/wire';
import type { Client } from '../client';
import { intFlag, parseFlags, stringFlag } from '../flags';
import { age, errLine, json, out, shortCommand, table, usage } from '../output';
import { follow, reattachTty } from './run';
import { JOB_ID, jobNameProblem } from '../../core/job-options';
import { parseSince, SINCE_RULE } from '../../core/since';
import { MAX_TAIL_LINES } from '../../core/tail';

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

export const JOBS_HELP = `usage: rc jobs [--state s1,s2] [--device host:gpuN] [--submitter name] [--name name]
               [--since 2h|7d|<ISO time>] [--mine] [--array id] [--limit n] [--json]

Current and past jobs across the fleet, newest first (50 by default, at most 1000).
States: queued, running, succeeded, failed, killed, lost, cancelled, preempted.

      --name <name>     only jobs given this name (rc run --name)
      --since <when>    only jobs created since: a duration back from now (30m, 2h,
                        7d) or an ISO time (2026-05-01, 2026-05-01T12:00Z)
      --mine            only jobs submitted with your token (RC_TOKEN)
      --array <id>      the tasks of this array (rc run --array), by index; the
                        NAME column shows <array>:<index>
      --json            { "jobs": [ ... ] } (docs/cli.md, "JSON output")
`;

export async function jobs(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'jobs',
    args,
    [
      { name: 'state', type: 'string' },
      { name: 'device', short: 'd', type: 'string' },
      { name: 'submitter', type: 'string' },
      { name: 'name', type: 'string' },
      { name: 'since', type: 'string' },
      { name: 'mine', type: 'boolean' },
      { name: 'array', type: 'string' },
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
  if (parsed.rest.length)
    usage(`rc jobs takes no arguments (got ${parsed.rest[0]}); filter with --state, --device, --submitter, --name, --since, --mine, --array`);
  // Checked here as the controller checks them, so that a mistake is a usage error that sends nothing.
  const limit = intFlag(parsed, 'limit', 1, 1000);
  const name = stringFlag(parsed, 'name');
  const nameProblem = name === undefined ? null : jobNameProblem(name);
  if (nameProblem) usage(`--name: ${nameProblem}`);
  const since = stringFlag(parsed, 'since');
  if (since !== undefined && parseSince(since) === null) usage(`--since takes ${SINCE_RULE}; not ${since}`);
  const query: JobsQuery = { name, since, limit: limit === undefined ? undefined : String(limit), mine: parsed.flags.has('mine') ? '1' : undefined };
  for (const k of ['state', 'device', 'submitter', 'array'] as const) query[k] = stringFlag(parsed, k);
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
        nameOf(j),
        what(j),
      ]),
    ),
  );
  return EXIT.ok;
}

/** A job's name as the tables show it: an array's task is `<array>:<index>` (what rc logs takes). */
function nameOf(j: JobView): string {
  return j.array ? `${j.array.id}:${j.array.index}` : (j.name ?? '-');
}

/** A job run more than once: which attempt this is, and how each earlier one ended. */
export function attemptNote(j: JobView): string {
  if (j.attempt <= 1) return '';
  const earlier = (j.attempts ?? []).map((a) => `${a.attempt}: ${a.state}${a.reason ? `, ${a.reason}` : ''}`).join('; ');
  return ` [attempt ${j.attempt}${earlier ? `; ${earlier}` : ''}]`;
}

export const PS_HELP = `usage: rc ps [--limit n | --all] [--tasks] [--json]

What is running and queued now, whose it is, and each queued job's place in
line (#1 is next; --json's position counts the jobs ahead, 0 for #1). Running jobs come first; queued jobs are listed in the order
they will be considered. The table shows the first 500 (--limit n: the
first n; --all: every one) and says on stderr how many more there are.
--json lists every one unless --limit is given.
An array (rc run --array) with tasks left is one line after the jobs, with
its tasks counted by state; --tasks lists its tasks as jobs too.
`;

/** Jobs asked for per request: the API's largest page. */
const PS_PAGE = 5000;

/** The first `want` jobs of GET /api/ps (null: all of them), a page at a time. */
async function psJobs(client: Client, want: number | null, tasks: boolean): Promise<PsPage> {
  const jobs: PsEntry[] = [];
  let page: PsPage;
  let after: string | undefined;
  do {
    const limit = want === null ? PS_PAGE : Math.min(PS_PAGE, want - jobs.length);
    page = await client.call('GET /api/ps', { query: { limit: String(limit), after, ...(tasks ? { tasks: '1' as const } : {}) } });
    jobs.push(...page.jobs);
    after = page.next ?? undefined;
  } while (after !== undefined && (want === null || jobs.length < want));
  // A controller from before pages (rc upgraded first) answers every job, with neither counts nor next: all are shown.
  const counts = page.counts ?? { running: jobs.filter((j) => j.state === 'running').length, queued: jobs.filter((j) => j.state === 'queued').length };
  return { jobs, counts, next: page.next ?? null, arrays: page.arrays ?? [] };
}

export async function ps(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'ps',
    args,
    [
      { name: 'limit', type: 'string' },
      { name: 'all', type: 'boolean' },
      { name: 'tasks', type: 'boolean' },
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
  const body = await psJobs(client, all || (asJson && first === undefined) ? null : (first ?? 500), parsed.flags.has('tasks'));
  if (asJson) {
    json(body);
    return EXIT.ok;
  }
  // Until when each queued job waits at the latest (core/until.ts): a column only while some job waits.
  const now = Date.now();
  const clock = localClock(now);
  const until = body.jobs.some((j) => j.state === 'queued' && j.freesBy !== undefined);
  out(
    table(
      ['JOB', 'STATE', 'WHERE', 'SUBMITTER', 'FOR', 'LIMIT', 'NAME', 'COMMAND', 'GPU', ...(until ? ['UNTIL (AT THE LATEST)'] : [])],
      body.jobs.map((j) => [
        j.id,
        (j.state === 'queued' ? (j.position === null ? 'waiting' : `queued ${placeInLine(j.position)}`) : j.state) +
          (j.attempt > 1 ? ` (attempt ${j.attempt})` : ''),
        j.state === 'queued' ? queuedWhere(j) + (j.waits ? ` (${j.waits})` : '') : (j.devices ?? []).join(','),
        j.submitter,
        age(j.startedAt ?? j.createdAt),
        limit(j),
        nameOf(j),
        what(j),
        // Its GPUs' idleness (core/idle.ts): idle 42m, busy, or no GPU signal (a CPU slot).
        j.state === 'running' ? idleText(j.idleS, formatDuration) + (j.idleWarned ? ' (warned)' : '') : '-',
        ...(until ? [j.state === 'queued' && j.freesBy !== undefined ? untilShort(j.freesBy, now, clock) : '-'] : []),
      ]),
    ),
  );
  const arrays = body.arrays ?? [];
  if (arrays.length)
    out(
      `\n${table(
        ['ARRAY', 'TASKS', 'RUNNING', 'QUEUED', 'DONE', 'FAILED', 'SUBMITTER', 'NAME', 'COMMAND'],
        arrays.map((a) => {
          const c = a.counts;
          const bad = c.failed + c.killed + c.cancelled + c.lost + c.preempted;
          return [
            a.id,
            `${a.size}${a.maxRunning === null ? '' : ` (%${a.maxRunning})`}`,
            String(c.running),
            String(c.queued + c.waiting),
            String(c.succeeded),
            String(bad),
            a.submitter,
            a.name ?? '-',
            shortCommand(a.argv, 50),
          ];
        }),
      )}`,
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

export const LOGS_HELP = `usage: rc logs [-f|--follow] [--tail n] [--json] <job-id|name>

Prints the job's stored output (stdout to stdout, stderr to stderr) and exits.
With -f, replays it and then follows new output until the job ends; Ctrl-C
stops following without touching the job. A name (rc run --name) stands for
the one queued or running job with it, else the one job ever given it.

  -f, --follow      follow new output until the job ends
      --tail <n>    start at the last n lines of the stored output (stdout and
                    stderr together, as they came; 0 to ${MAX_TAIL_LINES}); with -f, then follow
      --json        one JSON object a line: each chunk {"type":"output","stream",
                    "offset","data"}, then the exit (or, for a job still going
                    without -f, {"type":"end"}) (docs/cli.md, "JSON output")
`;

export async function logs(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'logs',
    args,
    [
      { name: 'follow', short: 'f', type: 'boolean' },
      { name: 'tail', type: 'string' },
      { name: 'json', type: 'boolean' },
      { name: 'help', short: 'h', type: 'boolean' },
    ],
    false,
  );
  if (parsed.flags.has('help')) {
    out(LOGS_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length !== 1) usage('rc logs takes one job id or name: rc logs [-f] [--tail n] <job-id|name>');
  const tail = intFlag(parsed, 'tail', 0, MAX_TAIL_LINES);
  const id = await jobIdOf(client, parsed.rest[0]!);
  const res = await client.stream('GET /api/jobs/:id/stream', { id, query: { follow: parsed.flags.has('follow') ? '1' : undefined, tail } });
  const code = await follow(client, res, { detachOnInterrupt: true, knownJobId: id, reconnect: parsed.flags.has('follow'), json: parsed.flags.has('json') });
  return code === EXIT.unreachable ? code : EXIT.ok;
}

export const ATTACH_HELP = `usage: rc attach [--json] <job-id|name>

Re-streams a job's output from the beginning and follows it until it ends,
then exits as rc run would (the command's exit code). Ctrl-C detaches; the
job keeps running. A running terminal (rc run --tty) is re-attached instead:
its recent screen is replayed and your keys go to it again. A name stands for
a job as in rc logs. --json prints the job's lines as rc logs --json does (not
for a terminal).
`;

export async function attach(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'attach',
    args,
    [
      { name: 'json', type: 'boolean' },
      { name: 'help', short: 'h', type: 'boolean' },
    ],
    false,
  );
  if (parsed.flags.has('help')) {
    out(ATTACH_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length !== 1) usage('rc attach takes one job id or name: rc attach <job-id|name>');
  const { job } = await client.call('GET /api/jobs/:id', { id: parsed.rest[0]! });
  const id = job.id;
  const asJson = parsed.flags.has('json');
  if (job.kind === 'tty' && (job.state === 'running' || job.state === 'queued')) {
    if (asJson) usage(`job ${id} is a terminal: rc attach --json is for jobs with stored output`);
    return reattachTty(client, id);
  }
  const res = await client.stream('GET /api/jobs/:id/stream', { id, query: { follow: '1' } });
  return follow(client, res, { detachOnInterrupt: true, knownJobId: id, json: asJson });
}

/** Where a queued job may go, as rc ps shows it: -d, or its --gpu choices and selector. */
function queuedWhere(j: Pick<JobView, 'device' | 'selector' | 'gpuChoices'>): string {
  if (j.device) return j.device;
  const parts = [j.gpuChoices && `gpu ${j.gpuChoices}`, j.selector].filter(Boolean);
  return parts.join(' ') || 'any device';
}
