// rc hold / rc hold extend / rc release: a lease with a TTL and no command,
// for when you need the device for several commands (ssh to the host and work).
import { idempotencyKey, resending } from '../resend';
import { formatDuration } from '../../core/duration';
import { EXIT } from '../../core/exit-codes';
import { FRAME_EVENT, FrameDecoder } from '../../core/frames';
import type { JobEvent } from '../../protocol/wire';
import type { Client } from '../client';
import type { Body } from '../http1';
import { durationFlag, parseFlags, type FlagSpec } from '../flags';
import { err, errorLine, json, jsonLine, out, usage } from '../output';
import { jsonEventOf } from '../json-stream';
import type { JsonHeld } from '../../protocol/cli-json';
import { PLACEMENT_FLAGS, placementOf } from '../placement';
import { RECONNECT_MS } from './run';

export const HOLD_HELP = `usage: rc hold --ttl <dur> [--select <selector> | -d <host:gpuN>] [flags]
       rc hold extend <hold-id> --ttl <dur> [--json]

Claims a device and blocks, printing the device and the hold's id. The hold
lasts until Ctrl-C, until its TTL runs out (also if this command is gone), or
until rc release <hold-id>. While you hold it, ssh to the host and work there.
A TTL is required and at most 24h; rc hold extend makes a running hold end
<dur> from now. A hold whose GPUs sit idle (utilisation at most 1%, no
process) is warned of on stderr after the fleet's RC_IDLE_HOLD_WARN (default
30m), and, where the fleet sets RC_IDLE_HOLD_RELEASE, released after that long
(exit code 216, cause idle_hold).

      --ttl <dur>           how long to hold it, e.g. 2h (required; at most 24h)
  -s, --select <selector>   labels the device must have, e.g. 'vram>=40G'
  -d, --device <host:gpuN>  this device and no other
      --gpus <n>            devices on one host (1-8, default 1)
      --gpu <choices>       any one of these GPU families or models, in order of
                            preference, with how many on one host: A100:2,H100
                            (a family: A100 is any A100, 40 or 80 GB; an exact
                            model: A100-80GB is only that; 5090, RTX5090 and
                            'RTX 5090' are one). Starts on the first choice free
                            now, else on whichever frees first; --select must
                            hold too
      --priority <n>        -10..10, higher goes first (default 0)
      --no-wait             fail with busy instead of queueing
      --timeout <dur>       give up waiting for a device after this long
      --json                one JSON object a line on stdout: queued, started (with
                            the devices and expiresAt), notices, and the exit
                            (docs/cli.md, "JSON output"); rc hold extend --json
                            prints the hold: { "job": { ... } }
`;

export const RELEASE_HELP = `usage: rc release <hold-id> [--json]

Ends a hold: yours, or any with an admin token. The device is free at once.
--json prints the hold as the controller answered: { "job": { ... } }.
`;

const JSON_FLAG: FlagSpec = { name: 'json', type: 'boolean' };
const SPECS: FlagSpec[] = [{ name: 'ttl', type: 'string' }, ...PLACEMENT_FLAGS, JSON_FLAG, { name: 'help', short: 'h', type: 'boolean' }];

export async function hold(client: Client, args: readonly string[]): Promise<number> {
  if (args[0] === 'extend') return extend(client, args.slice(1));
  const parsed = parseFlags('hold', args, SPECS, false);
  if (parsed.flags.has('help')) {
    out(HOLD_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length) usage(`rc hold runs no command (got ${parsed.rest[0]}); use rc run for that, or hold and ssh to the host`);
  const ttlS = durationFlag(parsed, 'ttl', 1);
  if (ttlS === undefined) usage('rc hold needs --ttl, e.g. --ttl 2h: a hold always ends by itself');
  const asJson = parsed.flags.has('json');
  const body = { kind: 'hold' as const, ttlS, ...placementOf(parsed), submitter: client.submitter, idempotencyKey: idempotencyKey() };
  const res = await resending(() => client.stream('POST /api/jobs', { body }));
  let id: string | null = null;
  let interrupted = false;
  let result: number | null = null;
  let notice: NodeJS.Timeout | null = null;
  /** Its first line is printed once: a stream followed again (after a lost controller) replays the start. */
  let shown = false;
  /** --json's lines in the order of their events: the start's waits for the hold's end time. */
  let lines: Promise<unknown> = Promise.resolve();
  const emit = (line: () => unknown) => {
    lines = lines.then(line);
  };
  const release = () => {
    if (id) client.call('POST /api/holds/:id/release', { id, body: { submitter: client.submitter } }).catch(() => {});
  };
  const onSigint = () => {
    if (interrupted) {
      process.exitCode = EXIT.interrupted;
      process.exit();
    }
    interrupted = true;
    err(`\nrc: releasing hold ${id ?? ''}\n`);
    release();
  };
  process.on('SIGINT', onSigint);
  const onEvent = (e: JobEvent) => {
    switch (e.type) {
      case 'queued':
        id = e.jobId;
        if (interrupted) release();
        if (asJson && !shown) emit(() => jsonLine(jsonEventOf(e)));
        else if (!shown && !notice) notice = setTimeout(() => err(`rc: waiting for a device: hold ${e.jobId} is queued (${e.position} ahead of it)\n`), 1000);
        break;
      case 'started': {
        if (notice) clearTimeout(notice);
        if (shown) break;
        shown = true;
        const started = client.call('GET /api/jobs/:id', { id: e.jobId }).then(
          ({ job }) => {
            if (asJson) return jsonLine({ type: 'started', job: e.jobId, host: e.host, devices: e.devices, expiresAt: job.expiresAt } satisfies JsonHeld);
            const until = job.expiresAt ? new Date(job.expiresAt) : null;
            out(`hold ${e.jobId} on ${e.devices.join(',')} until ${until ? until.toISOString() : '?'} (${formatDuration(ttlS!)})\n`);
            err(`rc: holding ${e.devices.join(',')} (host ${e.host}). Ctrl-C or rc release ${e.jobId} ends it.\n`);
          },
          () => {},
        );
        emit(() => started);
        break;
      }
      case 'exit': {
        // Under --json the exit object says how it ended, and nothing else is said.
        const say = (text: string) => (asJson ? undefined : err(text));
        if (asJson) emit(() => jsonLine(jsonEventOf(e)));
        if (e.state === 'cancelled' && e.cause === 'no_wait') {
          say(`rc: busy: ${e.reason}\n`);
          result = EXIT.busy;
        } else if (e.state === 'cancelled') {
          say(`rc: hold ${e.jobId} was cancelled before it started: ${e.reason ?? ''}\n`);
          result = interrupted ? EXIT.interrupted : EXIT.wait_timeout;
        } else if (e.cause === 'idle_hold') {
          say(`rc: idle: hold ${e.jobId} was released: ${e.reason ?? 'its GPUs were idle'}\n`);
          result = interrupted ? EXIT.interrupted : EXIT.idle_hold;
        } else if (e.state === 'lost') {
          say(`rc: lost: hold ${e.jobId} was lost: ${e.reason ?? 'its worker went away'}\n`);
          result = EXIT.lost;
        } else {
          say(`rc: hold ${e.jobId} ended: ${e.reason ?? e.state}\n`);
          result = interrupted ? EXIT.interrupted : EXIT.ok;
        }
        break;
      }
      case 'notice':
        // The controller's word on the hold, e.g. that it has been idle RC_IDLE_HOLD_WARN.
        if (asJson) emit(() => jsonLine(jsonEventOf(e)));
        else err(`rc: ${e.message}\n`);
        break;
      case 'error':
        errorLine(e.code, e.message);
        result = e.code === 'busy' ? EXIT.busy : EXIT.error;
        break;
      default:
        break;
    }
  };
  /** Reads one stream of the hold's events until it ends (the hold's end, or a lost controller). */
  const read = (body: Body) =>
    new Promise<void>((resolve) => {
      const decoder = new FrameDecoder((type, payload) => {
        if (type === FRAME_EVENT) onEvent(JSON.parse(payload.toString('utf8')) as JobEvent);
      });
      body.consume({ data: (chunk) => decoder.push(chunk), end: resolve, error: () => resolve() });
    });
  try {
    await read(res);
    // A controller that stopped or restarted: the hold goes on, so follow it again, there or at another of RC_CONTROLLER.
    let deadline = Date.now() + RECONNECT_MS;
    let told = false;
    while (result === null && id && Date.now() < deadline) {
      if (!told) {
        err(`rc: lost the connection to the controller; reconnecting to hold ${id}...\n`);
        told = true;
      }
      await new Promise((r) => setTimeout(r, 500));
      const again = await client.stream('GET /api/jobs/:id/stream', { id, query: { follow: '1' } }).catch(() => null);
      if (!again) continue;
      deadline = Date.now() + RECONNECT_MS;
      told = false;
      // A Ctrl-C while no controller answered: its release is asked again now that one does.
      if (interrupted) release();
      await read(again);
    }
  } finally {
    if (notice) clearTimeout(notice);
    process.off('SIGINT', onSigint);
  }
  if (result === null)
    errorLine(
      'unreachable',
      `lost the connection to the controller; the hold${id ? ` ${id}` : ''} goes on until its TTL (rc release ${id ?? '<hold-id>'} ends it)`,
    );
  await lines;
  return result ?? EXIT.unreachable;
}

async function extend(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags('hold extend', args, [{ name: 'ttl', type: 'string' }, JSON_FLAG, { name: 'help', short: 'h', type: 'boolean' }], false);
  if (parsed.flags.has('help')) {
    out(HOLD_HELP);
    return EXIT.ok;
  }
  const ttlS = durationFlag(parsed, 'ttl', 1);
  if (parsed.rest.length !== 1 || ttlS === undefined) usage('rc hold extend <hold-id> --ttl <dur>');
  const id = parsed.rest[0]!;
  const answer = await client.call('POST /api/holds/:id/extend', { id, body: { submitter: client.submitter, ttlS } });
  if (parsed.flags.has('json')) {
    json(answer);
    return EXIT.ok;
  }
  const { job } = answer;
  out(
    job.expiresAt
      ? `hold ${job.id} now ends at ${job.expiresAt} (${formatDuration(ttlS!)} from now)\n`
      : `hold ${job.id} is still queued; it will last ${formatDuration(ttlS!)} once it starts\n`,
  );
  return EXIT.ok;
}

export async function release(client: Client, args: readonly string[]): Promise<number> {
  const parsed = parseFlags('release', args, [JSON_FLAG, { name: 'help', short: 'h', type: 'boolean' }], false);
  if (parsed.flags.has('help')) {
    out(RELEASE_HELP);
    return EXIT.ok;
  }
  if (parsed.rest.length !== 1) usage('rc release takes one hold id: rc release <hold-id>');
  const id = parsed.rest[0]!;
  const answer = await client.call('POST /api/holds/:id/release', { id, body: { submitter: client.submitter } });
  if (parsed.flags.has('json')) {
    json(answer);
    return EXIT.ok;
  }
  const { job } = answer;
  out(job.state === 'running' ? `releasing hold ${job.id}\n` : `hold ${job.id} is ${job.state}${job.reason ? ` (${job.reason})` : ''}\n`);
  return EXIT.ok;
}
