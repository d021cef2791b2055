// Flag parsing shared by every command: declared flags only, clear errors.
import { parseDuration } from '../core/duration';
import { usage } from './output';

export interface FlagSpec {
  name: string;
  short?: string;
  type: 'string' | 'boolean';
  /** A string flag that may be given several times (rc run --env): every value is kept, in order, in `Parsed.lists`. */
  repeat?: true;
}

export interface Parsed {
  /** Each flag's value (the last one, for a flag given twice). */
  flags: Map<string, string | true>;
  /** Every value of a `repeat` flag, in the order given. */
  lists: Map<string, string[]>;
  rest: string[];
}

/**
 * Parses flags up to `--` or, when `stopAtPositional`, up to the first
 * positional argument: everything from there on is passed through untouched.
 */
export function parseFlags(command: string, args: readonly string[], specs: readonly FlagSpec[], stopAtPositional: boolean): Parsed {
  const flags = new Map<string, string | true>();
  const lists = new Map<string, string[]>();
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      rest.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      if (stopAtPositional) {
        rest.push(...args.slice(i));
        break;
      }
      rest.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const nameText = arg.startsWith('--') ? arg.slice(2, eq > 0 ? eq : undefined) : arg.slice(1, 2);
    const spec = specs.find((s) => (arg.startsWith('--') ? s.name === nameText : s.short === nameText));
    if (!spec) usage(`unknown flag ${arg.startsWith('--') ? `--${nameText}` : arg} for rc ${command}; see rc ${command} --help`);
    if (spec.type === 'boolean') {
      if (eq > 0) usage(`--${spec.name} takes no value`);
      flags.set(spec.name, true);
      continue;
    }
    let value: string | undefined;
    if (arg.startsWith('--') && eq > 0) value = arg.slice(eq + 1);
    else if (!arg.startsWith('--') && arg.length > 2) value = arg.slice(2);
    else value = args[++i];
    if (value === undefined) usage(`--${spec.name} needs a value`);
    flags.set(spec.name, value);
    if (spec.repeat) lists.set(spec.name, [...(lists.get(spec.name) ?? []), value]);
  }
  return { flags, lists, rest };
}

export function intFlag(parsed: Parsed, name: string, min: number, max: number): number | undefined {
  const v = parsed.flags.get(name);
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^-?\d+$/.test(v) || Number(v) < min || Number(v) > max)
    usage(`--${name} must be a whole number from ${min} to ${max}, not ${String(v)}`);
  return Number(v);
}

export function stringFlag(parsed: Parsed, name: string): string | undefined {
  const v = parsed.flags.get(name);
  return typeof v === 'string' ? v : undefined;
}

/** A duration flag in seconds (90s, 10m, 2h, 1h30m, 7d), at least `min`, at most 30 days. */
export function durationFlag(parsed: Parsed, name: string, min: number): number | undefined {
  const v = stringFlag(parsed, name);
  if (v === undefined) return undefined;
  const s = parseDuration(v);
  if (s === null || s < min || s > 30 * 86400)
    usage(`--${name} takes a duration such as 90s, 10m, 2h or 1h30m${min === 0 ? ' (0 disables it)' : ''}, at most 30d; not ${v}`);
  return s;
}

/**
 * Whether `--json` is among the flags (before `--`), read before the command parses them so that even its usage
 * errors come as JSON. `runSpecs`: rc run's flags, whose command starts at its first positional argument (a flag's
 * value is none); other commands' flags may follow their arguments.
 */
export function asksJson(args: readonly string[], runSpecs: readonly FlagSpec[] | null): boolean {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') return false;
    if (arg === '--json') return true;
    if (!runSpecs) continue;
    if (!arg.startsWith('-') || arg === '-') return false;
    const long = arg.startsWith('--');
    const spec = runSpecs.find((s) => (long ? s.name === arg.slice(2) : s.short === arg.slice(1)));
    // `--name value` and `-s value` take the next word; `--name=value` and `-svalue` do not.
    if (spec?.type === 'string') i++;
  }
  return false;
}
