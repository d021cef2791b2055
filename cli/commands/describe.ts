// rc describe host:gpuN: state, holder, every label with its source and age,
// the host's usage sheet, and the device's recent jobs. rc describe <job>: one
// job in full (its environment's keys, never their values).
import { idleText } from '../../core/idle';
import { reservedWhy } from '../../core/reserved';
import { EXIT } from '../../core/exit-codes';
import { formatSize } from '../../core/size';
import type { DeviceDescription, JobView, QueueEntry } from '../../protocol/wire';
import { localClock, untilText } from '../../core/until-text';
import { formatDuration } from '../../core/duration';
import { placeInLine } from '../../core/queue-place';
import { placementText, ranOnText } from '../../core/machine-text';
import type { Client } from '../client';
import { parseFlags } from '../flags';
import { age, indent, json, out, shortCommand, table, usage } from '../output';
import { stateText } from './devices';
import { parseTaskRef } from '../../core/array-spec';
import { describeArray, isArrayRef } from './arrays';

export const DESCRIBE_HELP = `usage: rc describe <host:gpuN|job-id|name|array-id|array-id:index> [--json]

Prints the device's state and holder (or, when it is reserved, the queued job
it is held back for), every label with where it came from and how old it is, the host's usage sheet, and its recent jobs. Read the sheet
before you use the host: it is the operator talking to you.
Given a job id or a job name (rc run --name) instead, prints that job: its
state, name, submitter, command, devices, limits, its placement and
machine flags (--cloud-only ...), the provider machine it ran on, and the
names of the variables set with --env (never their values). Given an array's id, prints
the array: its spec, its cap and its tasks' counts by state; <array-id>:<index>
is one of its tasks.
      --json   the API's JSON (docs/api.md, GET /api/devices/:name or GET /api/jobs/:id)
`;

export async function describe(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags(
    'describe',
    args,
    [
      { name: 'json', type: 'boolean' },
      { name: 'help', short: 'h', type: 'boolean' },
    ],
    false,
  );
  if (parsed.flags.has('help')) {
    out(DESCRIBE_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length !== 1) usage('rc describe takes one device or job: rc describe host:gpu0, rc describe <job-id|name>');
  const what = parsed.rest[0]!;
  if (isArrayRef(what)) return describeArray(client, what, parsed.flags.has('json'));
  // A device name has a colon; a job id or name never does (core/job-options.ts); a task is <array-id>:<index>.
  if (!what.includes(':') || parseTaskRef(what)) {
    const body = await client.call('GET /api/jobs/:id', { id: what });
    if (parsed.flags.has('json')) {
      json(body);
      return EXIT.ok;
    }
    // A queued job: why it waits and until when at the latest, as the queue says (GET /api/queue: its first 1000).
    const wait = body.job.state === 'queued' ? ((await client.call('GET /api/queue')).jobs.find((j) => j.id === body.job.id) ?? null) : undefined;
    out(renderJob(body.job, Date.now(), wait));
    return EXIT.ok;
  }
  const d = await client.call('GET /api/devices/:name', { name: what });
  if (parsed.flags.has('json')) {
    json(d);
    return EXIT.ok;
  }
  out(renderDescription(d));
  return EXIT.ok;
}

export function renderDescription(d: DeviceDescription, now = Date.now()): string {
  const dev = d.device;
  let text = `${dev.name}  ${stateText(dev)}${dev.state === 'offline' ? ` (host ${dev.hostStatus})` : ''}\n`;
  const off = d.host?.off;
  if (off)
    text += `host:   ${dev.hostName} is turned off (by ${off.by}, ${age(off.since, now)} ago${off.reason ? `: ${off.reason}` : ''}): no new jobs start here${dev.state === 'busy' ? '; the running one finishes' : ''}\n`;
  if (dev.reservedFor) text += `reserved: for job ${dev.reservedFor.jobId} (${dev.reservedFor.submitter}): ${reservedWhy(dev.reservedFor)}\n`;
  text += `holder: ${dev.holder ? `${dev.holder.submitter}, job ${dev.holder.jobId}, for ${age(dev.holder.since, now)}${dev.holder.idleS !== undefined ? `, ${idleText(dev.holder.idleS, formatDuration)}` : ''}` : '-'}\n`;
  if (dev.uuid) text += `uuid:   ${dev.uuid}\n`;
  if (dev.gpu) {
    const g = dev.gpu;
    text += `gpu:    ${g.name}, memory ${g.memUsedMiB} / ${g.memTotalMiB} MiB used, utilisation ${g.utilPct === null ? 'n/a' : `${g.utilPct}%`} (sampled ${age(g.at, now)} ago)\n`;
  }
  if (dev.unhealthy) {
    text += `\nQUARANTINED for ${age(dev.unhealthy.since, now)}: ${dev.unhealthy.reason}\n`;
    text += `  evidence: ${JSON.stringify(dev.unhealthy.evidence)}\n`;
    text += '  Not scheduled until an operator checks it and runs rc admin clear. Pick another device.\n';
  }
  text += '\nLABELS\n';
  const rows = dev.labelDetails.map((l) => [
    l.key,
    showValue(l.key, l.value),
    l.source === 'detected' ? `detected (${l.probe ?? '?'})` : 'declared',
    age(l.seenAt, now),
    [l.hostWide ? 'host-wide' : '', l.effective ? '' : 'overridden', l.stale ? `STALE: ${l.stale}` : ''].filter(Boolean).join(', '),
  ]);
  text += indent(table(['KEY', 'VALUE', 'SOURCE', 'AGE', ''], rows));
  text += '\nUSAGE SHEET\n';
  text += d.sheet
    ? `  host-wide note, updated ${age(d.sheet.updatedAt, now)} ago by ${d.sheet.updatedBy}\n${indent(d.sheet.body)}`
    : '  (none: the operator has not written one for this host)\n';
  if (d.note) text += `\nDEVICE NOTE\n  updated ${age(d.note.updatedAt, now)} ago by ${d.note.updatedBy}\n${indent(d.note.body)}`;
  text += '\nRECENT JOBS\n';
  text += d.recentJobs.length
    ? indent(
        table(
          ['JOB', 'STATE', 'EXIT', 'SUBMITTER', 'WHEN', 'COMMAND'],
          d.recentJobs.map((j) => [
            j.id,
            j.state,
            j.exitCode === null ? '-' : String(j.exitCode),
            j.submitter,
            `${age(j.endedAt ?? j.createdAt, now)} ago`,
            shortCommand(j.argv, 60),
          ]),
        ),
      )
    : '  (none)\n';
  return text;
}

/** One job in full, as rc describe <job> prints it; a queued one with its place in the queue (null: past the queue's first 1000). */
export function renderJob(j: JobView, now = Date.now(), wait?: QueueEntry | null): string {
  const placement = placementText(j);
  const lines: [string, string][] = [
    ['name', j.name ?? '-'],
    ...(j.array ? [['array', `${j.array.id}, task ${j.array.index} (RC_ARRAY_INDEX)`] as [string, string]] : []),
    ...(j.comment ? [['comment', j.comment] as [string, string]] : []),
    ['kind', j.kind],
    ['state', j.state + (j.reason ? ` (${j.reason})` : '')],
    ...(wait === null ? [['waits', 'past the first 1000 in the queue: rc ps --all gives its place'] as [string, string]] : []),
    ...(wait
      ? ([
          ['waits', `${placeInLine(wait.position) ?? 'not'} in line: ${wait.why.text}`],
          ['until', untilText(wait.freesBy, j.gpus, now, localClock(now))],
        ] as [string, string][])
      : []),
    ['exit', j.exitCode === null ? '-' : String(j.exitCode)],
    ['submitter', j.submitter],
    ['command', j.kind === 'hold' ? '(hold)' : shortCommand(j.argv, 200)],
    ['env', j.envKeys.length ? j.envKeys.join(', ') : '-'],
    ['cwd', j.cwd ?? '-'],
    [
      'asked',
      [j.selector && `--select ${j.selector}`, j.device && `-d ${j.device}`, j.gpuChoices ? `--gpu ${j.gpuChoices}` : j.gpus > 1 && `--gpus ${j.gpus}`]
        .filter(Boolean)
        .join(' ') || 'any device',
    ],
    // Where it may run and what it asks of a provider machine (rc run --cloud-only …); nothing for a plain job.
    ...(placement ? [['placement', placement] as [string, string]] : []),
    ['devices', (j.devices ?? []).join(', ') || '-'],
    // The provider machine its host is (GET /api/jobs/:id's ranOn).
    ...(j.ranOn ? [['machine', ranOnText(j.ranOn)] as [string, string]] : []),
    // Why rc logs is not all of it (core/output-truncated.ts).
    ...(j.outputTruncated ? [['output', `truncated (${j.outputTruncatedReason ?? 'output_limit'})`] as [string, string]] : []),
    [
      'attempt',
      `${j.attempt}${j.restarts ? ` (restarts ${j.restarts}: up to ${j.restarts + 1} attempts)` : ''}` +
        (j.retries ? `, retries ${j.retried} of ${j.retries} used${j.retryDelayS ? ` (${formatDuration(j.retryDelayS)} apart)` : ''}` : '') +
        (j.preemptible ? `, preemptible${j.retryOnPreempt ? ', retried when preempted' : ''}` : ''),
    ],
    // rc run --after / --after-any: each job it runs after, as it stands now.
    ...(j.after?.length
      ? [
          ['after', j.after.map((d) => `${d.id} (${d.state}${d.exitCode !== null ? `, exit ${d.exitCode}` : ''})${d.any ? ' any end' : ''}`).join(', ')] as [
            string,
            string,
          ],
        ]
      : []),
    ...(j.waiting === 'retry' && j.notBefore ? [['waits', `retry after ${new Date(j.notBefore).toISOString()}`] as [string, string]] : []),
    ...(j.waiting === 'after' ? [['waits', 'for the jobs it runs after (after:)'] as [string, string]] : []),
    [
      'limits',
      `max-runtime ${j.maxRuntimeS ? formatDuration(j.maxRuntimeS) : '-'}, idle-timeout ${j.idleTimeoutS ? formatDuration(j.idleTimeoutS) : '-'}, gpu-idle-timeout ${j.gpuIdleTimeoutS ? formatDuration(j.gpuIdleTimeoutS) : '-'}`,
    ],
    [
      'idle',
      (j.state === 'running' ? idleText(j.idleS, formatDuration) + (j.idleWarned ? ' (warned: idle for RC_IDLE_HOLD_WARN)' : '') : '-') +
        (j.idleTotalS !== null ? `; ${formatDuration(Math.floor(j.idleTotalS))} idle in all` : ''),
    ],
    ['created', `${age(j.createdAt, now)} ago`],
    ['started', j.startedAt ? `${age(j.startedAt, now)} ago` : '-'],
    ['ended', j.endedAt ? `${age(j.endedAt, now)} ago` : '-'],
  ];
  let text = `${j.id}  ${j.state}\n${lines.map(([k, v]) => `${`${k}:`.padEnd(11)}${v}\n`).join('')}`;
  if (j.attempts?.length) {
    text += '\nEARLIER ATTEMPTS\n';
    text += indent(
      table(
        ['#', 'STATE', 'CAUSE', 'HOST', 'DEVICES', 'EXIT', 'ENDED', 'REASON'],
        j.attempts.map((a) => [
          String(a.attempt),
          a.state,
          a.cause,
          a.host ?? '-',
          (a.devices ?? []).join(',') || '-',
          a.exitCode === null ? '-' : String(a.exitCode),
          `${age(a.endedAt, now)} ago`,
          a.reason ?? '-',
        ]),
      ),
    );
  }
  return text;
}

function showValue(key: string, value: string): string {
  return /(^vram$|_bytes$)/.test(key) && /^\d+$/.test(value) ? `${formatSize(Number(value))} (${value})` : value;
}
