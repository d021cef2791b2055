// How the CLI speaks: `rc: <code>: <sentence>` on stderr, and a fixed exit code.
// rc's own text reaches stdout and stderr only through out(), err() and json()
// here; a job's output is written elsewhere, byte for byte, but it too takes
// the streams from stdout() and stderr() here, so the exit knows to wait for them.
// With --json (setJsonOutput), stdout carries JSON alone and stderr too: the
// error that ends rc is `{"error":{"code","message"}}`, anything else rc says
// `{"notice":{"message"}}`, one object a line (docs/cli.md, "JSON output").
import { EXIT } from '../core/exit-codes';
import { safeText } from './safe-text';

export class CliExit extends Error {
  constructor(
    readonly exitCode: number,
    message: string | null,
    /** The error code printed (`rc: <code>: ...`); null for a usage error or a plain exit. */
    readonly code: string | null = null,
    /** The request may have reached the controller and been lost on the way back: only a request safe to repeat (a submit with its idempotency key) is sent again. */
    readonly mayResend = false,
    /** The sentence alone, without `rc: <code>: ` (the error object's message under --json). */
    readonly sentence: string | null = null,
  ) {
    super(message ?? '');
  }
}

/** Stops the command: prints `rc: code: message` and exits with `exitCode`. */
export function fail(code: string, message: string, exitCode: number = EXIT.error, mayResend = false): never {
  throw new CliExit(exitCode, `rc: ${code}: ${message}`, code, mayResend, message);
}

export function usage(message: string): never {
  throw new CliExit(EXIT.usage, `rc: usage: ${message}`, null, false, message);
}

/** --json was given: see the top of this file. */
let jsonOutput = false;
export function setJsonOutput(on: boolean): void {
  jsonOutput = on;
}
export function jsonOutputOn(): boolean {
  return jsonOutput;
}

/** The error that ends rc, on stderr: `rc: <code>: <message>`, or under --json `{"error":{"code","message"}}` (a usage error's code is `usage`). */
export function errorLine(code: string, message: string): void {
  if (jsonOutput) stderr().write(`${JSON.stringify({ error: { code, message } })}\n`);
  else err(`rc: ${code}: ${message}\n`);
}

/** How a CliExit is told on stderr: as errorLine, or its text as it is (a plain exit has none). */
export function tellExit(e: CliExit): void {
  if (!e.message) return;
  if (jsonOutput) errorLine(e.code ?? 'usage', e.sentence ?? e.message);
  else err(`${e.message}\n`);
}

/**
 * Which of stdout and stderr this run has used. Node makes each on first use,
 * and making one costs a few ms (about 6 for a pipe): an `rc run -- true` that
 * prints nothing makes neither, and has nothing to wait for at exit.
 */
const used = { stdout: false, stderr: false };

/** process.stdout, for rc's text or a job's output: everything the CLI writes there takes it from here. */
export function stdout(): NodeJS.WriteStream {
  if (!used.stdout) process.stdout.on('error', brokenPipe);
  used.stdout = true;
  return process.stdout;
}

/** process.stderr, likewise. */
export function stderr(): NodeJS.WriteStream {
  if (!used.stderr) process.stderr.on('error', brokenPipe);
  used.stderr = true;
  return process.stderr;
}

/** What to do before rc exits for a reader gone (rc run kills its job, as SIGPIPE would end a local command). */
let onBrokenPipe: (() => Promise<void>) | null = null;
export function setBrokenPipeHook(hook: (() => Promise<void>) | null): void {
  onBrokenPipe = hook;
}

/**
 * A reader that stopped early (`rc run -- yes | head -1`): rc stops as a
 * program killed by SIGPIPE does, quietly with 141 (128 + 13), after its hook,
 * instead of crashing on an unhandled EPIPE.
 */
let pipeBroken = false;
function brokenPipe(e: NodeJS.ErrnoException): void {
  // Every write after the first failed one fails too: the first decides.
  if (pipeBroken) return;
  pipeBroken = true;
  const code = e.code === 'EPIPE' ? EXIT.broken_pipe : EXIT.error;
  const hook = onBrokenPipe;
  onBrokenPipe = null;
  const exit = () => process.exit(code);
  if (!hook) return exit();
  // Bounded: a controller that does not answer does not keep rc.
  setTimeout(exit, 2000).unref();
  hook().then(exit, exit);
}

/** Exits as soon as what was written has reached stdout and stderr: no waiting for sockets to wind down. */
export function exitWhenFlushed(code: number): void {
  // A stream with nothing left in its buffer has handed everything to the kernel (a write that did not finish at once
  // stays counted): only those are waited for. Waiting for the callback of an empty write costs Bun (the standalone rc) ~10 ms.
  const streams: NodeJS.WriteStream[] = [];
  for (const [isUsed, s] of [
    [used.stdout, process.stdout],
    [used.stderr, process.stderr],
  ] as const)
    if (isUsed && s.writableLength > 0) streams.push(s);
  let pending = streams.length;
  const done = () => {
    if (--pending <= 0) process.exit(code);
  };
  if (!pending) return done();
  for (const stream of streams) stream.write('', done);
}

/** Text for `stream`: its controls escaped when the stream is a terminal (safe-text.ts), as it is otherwise (a pipe, a file: programs parse it). */
export function onScreen(stream: NodeJS.WriteStream, text: string): string {
  return stream.isTTY ? safeText(text) : text;
}

/** rc's own text on stdout: tables, descriptions, answers, help. */
export function out(text: string): void {
  const s = stdout();
  s.write(onScreen(s, text));
}

/** rc's own text on stderr: notices (errors: errorLine). Under --json, a notice object: its text without `rc: ` and the line ends. */
export function err(text: string): void {
  const s = stderr();
  if (jsonOutput) s.write(`${JSON.stringify({ notice: { message: text.trim().replace(/^rc: /, '') } })}\n`);
  else s.write(onScreen(s, text));
}

/** One line of rc's own on stderr; `crlf` for a raw terminal (rc run --tty), where it starts and ends with \r\n. */
export function errLine(line: string, crlf = false): void {
  if (jsonOutput) return err(line);
  const s = stderr();
  const shown = onScreen(s, line);
  s.write(crlf ? `\r\n${shown}\r\n` : `${shown}\n`);
}

/** --json, one answer: the API's JSON (or the CLI's own object), indented, never escaped, terminal or not. */
export function json(value: unknown): void {
  stdout().write(`${JSON.stringify(value, null, 2)}\n`);
}

/** --json, a followed job: one object a line (NDJSON), as each thing happens. */
export function jsonLine(value: unknown): void {
  stdout().write(`${JSON.stringify(value)}\n`);
}

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

/** "12s", "3m", "2h", "4d": how long ago an ISO time was. */
export function age(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** `text`, cut to `max` characters with an ellipsis (a table cell). */
export function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function indent(text: string, by = '  '): string {
  return `${text
    .replace(/\n+$/, '')
    .split('\n')
    .map((l) => (l ? by + l : l))
    .join('\n')}\n`;
}

/** A command line for a table cell: shell-safe words as they are, others quoted, cut at `max` characters. */
export function shortCommand(argv: readonly string[], max: number): string {
  const s = argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}
