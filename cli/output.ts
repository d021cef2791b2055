// How the CLI speaks: `rc: <code>: <sentence>` on stderr, and a fixed exit code.
import { EXIT } from '../core/exit-codes';

export class CliExit extends Error {
  constructor(readonly exitCode: number, message: string | null) {
    super(message ?? '');
  }
}

/** Stops the command: prints `rc: code: message` and exits with `exitCode`. */
export function fail(code: string, message: string, exitCode: number = EXIT.error): never {
  throw new CliExit(exitCode, `rc: ${code}: ${message}`);
}

export function usage(message: string): never {
  throw new CliExit(EXIT.usage, `rc: usage: ${message}`);
}

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/** "12s", "3m", "2h", "4d": how long ago an ISO time was. */
export function age(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

export function indent(text: string, by = '  '): string {
  return text.replace(/\n+$/, '').split('\n').map((l) => (l ? by + l : l)).join('\n') + '\n';
}

/** A command line for a table cell: shell-safe words as they are, others quoted, cut at `max` characters. */
export function shortCommand(argv: readonly string[], max: number): string {
  const s = argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
  return s.length > max ? s.slice(0, max - 3) + '...' : s;
}
