// npm run docs: rewrites the tables in README.md and docs/*.md that restate the code, from the code's own
// definitions. A table sits between `<!-- generated:NAME [ARGS] -->` and `<!-- /generated:NAME -->`; everything
// else in a page is left as written. test/unit/docs-tables.test.ts regenerates them in memory and fails when a
// page differs, so a table cannot drift from the code it describes.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RUN_HELP, RUN_SPECS } from '../cli/commands/run';
import type { FlagSpec } from '../cli/flags';
import { ERROR_MEANING, ERROR_STATUS } from '../core/errors';
import { EXIT, EXIT_MEANING } from '../core/exit-codes';
import { CONTROLLER_SETTINGS } from '../server/config';
import { WORKER_SETTINGS } from '../worker/config';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The pages generated tables may be in: README.md and every page of docs/, as paths from the checkout. */
export function docFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort();
  return ['README.md', ...docs.map((f) => `docs/${f}`)];
}

/** A Markdown table, its columns padded as the hand-written tables are, so a regenerated page reads the same. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  // A `|` inside a cell would split it, even in a code span: GitHub's tables want it escaped.
  const cells = [header, ...rows].map((r) => r.map((c) => c.replace(/\|/g, '\\|')));
  const width = (s: string) => [...s].length;
  const widths = header.map((_, i) => Math.max(3, ...cells.map((r) => width(r[i] ?? ''))));
  const line = (r: readonly string[]) => `| ${r.map((c, i) => c + ' '.repeat(widths[i]! - width(c))).join(' | ')} |`;
  return [line(cells[0]!), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...cells.slice(1).map(line)].join('\n');
}

export interface RunFlag {
  spec: FlagSpec;
  /** As rc run --help writes it: `-s, --select <selector>`. */
  usage: string;
  /** rc run --help's lines for it, joined. */
  meaning: string;
}

/**
 * rc run's flags as its help describes them, each matched to the flag rc run parses (RUN_SPECS). Throws when
 * the two disagree: a flag the help leaves out or names twice, one the parser does not take, or a help line
 * that gives a value to a flag that takes none (or none to one that takes a value).
 */
export function runFlags(help: string = RUN_HELP, specs: readonly FlagSpec[] = RUN_SPECS): RunFlag[] {
  const flags: RunFlag[] = [];
  for (const line of help.split('\n')) {
    // `  -s, --select <selector>   labels…`, `      --no-wait             fail…`, or a flag alone on its line.
    const start = /^ {2}(?:-(\w), | {4})--([a-z][a-z-]*)(?: (\S+))?(?: {2,}(\S.*))?$/.exec(line);
    if (start) {
      const [, short, name, value, text] = start;
      const spec = specs.find((s) => s.name === name);
      if (!spec) throw new Error(`rc run --help describes --${name}, which rc run does not take (cli/commands/run.ts RUN_SPECS)`);
      if (spec.short !== short)
        throw new Error(
          `rc run --help writes --${name}'s short form as ${short ? `-${short}` : 'none'}, RUN_SPECS as ${spec.short ? `-${spec.short}` : 'none'}`,
        );
      if ((value !== undefined) !== (spec.type === 'string')) throw new Error(`rc run --help and RUN_SPECS disagree on whether --${name} takes a value`);
      if (flags.some((f) => f.spec === spec)) throw new Error(`rc run --help describes --${name} twice`);
      flags.push({ spec, usage: `${short ? `-${short}, ` : ''}--${name}${value ? ` ${value}` : ''}`, meaning: text ?? '' });
      continue;
    }
    const more = /^ {20,}(\S.*)$/.exec(line);
    if (more && flags.length > 0) flags[flags.length - 1]!.meaning = `${flags[flags.length - 1]!.meaning} ${more[1]}`.trim();
  }
  // --help is rc's own, and no job's: the help does not list it.
  const missing = specs.filter((s) => s.name !== 'help' && !flags.some((f) => f.spec === s));
  if (missing.length > 0) throw new Error(`rc run --help does not describe ${missing.map((s) => `--${s.name}`).join(', ')}`);
  return flags;
}

/** Help text is plain text: in a Markdown cell, `<id>` would be taken for an HTML tag and vanish. */
const plain = (s: string) => s.replace(/</g, '\\<');

const code = (s: string) => `\`${s}\``;

function settingsTable(settings: Record<string, { default: string; meaning: string }>, source: string, only: readonly string[]): string {
  for (const name of only) if (!Object.hasOwn(settings, name)) throw new Error(`${name} is not a setting of ${source}`);
  const names = only.length > 0 ? only : Object.keys(settings);
  return markdownTable(
    ['Variable', 'Default', 'Meaning'],
    names.map((n) => [code(n), settings[n]!.default, settings[n]!.meaning]),
  );
}

/** Each table a page may ask for, by the name in its markers; ARGS are the words after the name. */
export const TABLES: Record<string, { source: string; render: (args: readonly string[]) => string }> = {
  'run-flags': {
    source: 'cli/commands/run.ts (RUN_SPECS, RUN_HELP)',
    render: () =>
      markdownTable(
        ['Flag', 'Meaning'],
        runFlags().map((f) => [code(f.usage), plain(f.meaning)]),
      ),
  },
  'exit-codes': {
    source: 'core/exit-codes.ts (EXIT, EXIT_MEANING)',
    render: () =>
      markdownTable(
        ['Code', 'Meaning'],
        Object.entries(EXIT_MEANING)
          .map(([name, meaning]) => [EXIT[name as keyof typeof EXIT_MEANING], meaning] as const)
          .sort((a, b) => a[0] - b[0])
          .map(([n, meaning]) => [String(n), meaning]),
      ),
  },
  'error-codes': {
    source: 'core/errors.ts (ERROR_STATUS, ERROR_MEANING)',
    render: () =>
      markdownTable(
        ['Code', 'Status', 'When'],
        Object.entries(ERROR_MEANING).map(([c, when]) => [code(c), String(ERROR_STATUS[c as keyof typeof ERROR_STATUS]), when]),
      ),
  },
  'controller-env': {
    source: 'server/config.ts (CONTROLLER_SETTINGS)',
    render: (only) => settingsTable(CONTROLLER_SETTINGS, 'server/config.ts', only),
  },
  'worker-env': {
    source: 'worker/config.ts (WORKER_SETTINGS)',
    render: (only) => settingsTable(WORKER_SETTINGS, 'worker/config.ts', only),
  },
};

export interface Block {
  name: string;
  args: string[];
  /** What stands between the markers now, without the newlines next to them. */
  body: string;
  /** The offsets of the body in the page. */
  from: number;
  to: number;
}

/** The generated blocks of a page, in order. Throws on a marker with no end, or an end with no start. */
export function blocks(text: string, file: string): Block[] {
  const found: Block[] = [];
  // Markers are lines of their own: one quoted in a sentence or a code span is text.
  const open = /^<!-- generated:([a-z-]+)((?: +[^ >]+)*) *-->\n/gm;
  for (let m = open.exec(text); m; m = open.exec(text)) {
    const name = m[1]!;
    const close = `\n<!-- /generated:${name} -->`;
    const to = text.indexOf(close, m.index + m[0].length - 1);
    if (to < 0) throw new Error(`${file}: <!-- generated:${name} --> has no <!-- /generated:${name} --> after it`);
    const from = m.index + m[0].length;
    found.push({ name, args: m[2]!.trim().split(/ +/).filter(Boolean), body: text.slice(from, Math.max(from, to)), from, to });
    open.lastIndex = to + close.length;
  }
  const ends = text.match(/^<!-- \/generated:/gm)?.length ?? 0;
  if (ends !== found.length) throw new Error(`${file}: a <!-- /generated:… --> without its <!-- generated:… -->`);
  return found;
}

/** The table a block should hold. */
export function render(block: Pick<Block, 'name' | 'args'>, file: string): string {
  const table = TABLES[block.name];
  if (!table) throw new Error(`${file}: no generated table is called ${block.name} (scripts/docs.ts knows ${Object.keys(TABLES).join(', ')})`);
  return table.render(block.args);
}

/** The page with every generated table written afresh. */
export function regenerate(text: string, file: string): string {
  let out = '';
  let at = 0;
  for (const b of blocks(text, file)) {
    out += `${text.slice(at, b.from)}${render(b, file)}`;
    at = b.to;
  }
  return out + text.slice(at);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const file of docFiles()) {
    const path = join(ROOT, file);
    const before = readFileSync(path, 'utf8');
    const after = regenerate(before, file);
    if (after !== before) {
      writeFileSync(path, after);
      console.log(`npm run docs: rewrote ${file}`);
    }
  }
}
