// What the CLI prints to a terminal: control characters shown, never obeyed
// (cli/safe-text.ts), and only where rc writes its own text (cli/output.ts).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { onScreen } from '../../cli/output';
import { safeText } from '../../cli/safe-text';

const BIDI = [0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069];

/** The rule as docs/cli.md states it, one UTF-16 unit at a time. */
function shown(unit: number): string {
  if (unit === 0x0a || unit === 0x09) return String.fromCharCode(unit);
  if (unit < 0x20 || (unit >= 0x7f && unit <= 0x9f)) return `\\x${unit.toString(16).padStart(2, '0')}`;
  if (BIDI.includes(unit)) return `\\u${unit.toString(16).padStart(4, '0')}`;
  return String.fromCharCode(unit);
}

const RAW_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** Text rich in what matters: controls, bidi controls, backslashes, hex digits, newlines; and any other unit. */
const text = fc.string({
  unit: fc.oneof(
    fc.constantFrom(
      '\x1b',
      '\x07',
      '\x00',
      '\r',
      '\x7f',
      '\x85',
      '\x9b',
      '\x9c',
      '\u202e',
      '\u2066',
      '\u2069',
      '\u200f',
      '\u061c',
      '\n',
      '\t',
      '\\',
      'x',
      'u',
      '1',
      'b',
      'a',
      ' ',
      'é',
      '東',
      '\u{1f600}',
    ),
    fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)),
  ),
  maxLength: 80,
});

test('every UTF-16 unit is shown as the rule says: C0 but newline and tab, DEL and C1 as \\xHH, bidi controls as \\uHHHH, the rest as it is', () => {
  for (let unit = 0; unit <= 0xffff; unit++) {
    assert.equal(safeText(String.fromCharCode(unit)), shown(unit), `U+${unit.toString(16).padStart(4, '0')}`);
  }
  assert.equal(safeText('\u{1f600} \u{10ffff}'), '\u{1f600} \u{10ffff}', 'astral characters pass');
});

test('the escapes of the issue, as a person reads them', () => {
  assert.equal(safeText('\x1b]0;pwned\x07'), '\\x1b]0;pwned\\x07');
  assert.equal(safeText('\x1b[2J'), '\\x1b[2J');
  assert.equal(safeText('\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\'), '\\x1b]8;;http://evil\\x1b\\link\\x1b]8;;\\x1b\\');
  assert.equal(safeText('\u009b31m'), '\\x9b31m');
  assert.equal(safeText('invoice\u202efdp.exe'), 'invoice\\u202efdp.exe');
  assert.equal(safeText('\u2066a\u2069'), '\\u2066a\\u2069');
  assert.equal(safeText('# sheet\n\n\tindented\r\n'), '# sheet\n\n\tindented\\x0d\n');
  assert.equal(safeText(''), '');
});

test('a string is shown piece by piece: escaping a + b is escaping a, then b', () => {
  fc.assert(
    fc.property(text, text, (a, b) => safeText(a + b) === safeText(a) + safeText(b)),
    { numRuns: 2000 },
  );
});

test('nothing a terminal obeys is left, and newlines and tabs stay where they were', () => {
  fc.assert(
    fc.property(text, (s) => {
      const out = safeText(s);
      assert.doesNotMatch(out, RAW_CONTROL);
      assert.equal(out.split('\n').length, s.split('\n').length);
      assert.equal(out.split('\t').length, s.split('\t').length);
    }),
    { numRuns: 2000 },
  );
});

test('text with nothing to escape comes back as it is; escaped text without backslashes of its own reads back exactly', () => {
  fc.assert(
    fc.property(text, (s) => {
      if (!RAW_CONTROL.test(s)) assert.equal(safeText(s), s);
      if (!s.includes('\\')) {
        const back = safeText(s).replace(/\\x([0-9a-f]{2})|\\u([0-9a-f]{4})/g, (_, x: string | undefined, u: string | undefined) =>
          String.fromCharCode(parseInt(x ?? u!, 16)),
        );
        assert.equal(back, s);
      }
    }),
    { numRuns: 2000 },
  );
});

test('onScreen escapes for a terminal only: a pipe or a file gets the same string', () => {
  const tty = { isTTY: true } as NodeJS.WriteStream;
  const pipe = { isTTY: false } as unknown as NodeJS.WriteStream;
  const file = {} as NodeJS.WriteStream;
  fc.assert(
    fc.property(text, (s) => {
      assert.equal(onScreen(tty, s), safeText(s));
      assert.equal(onScreen(pipe, s), s);
      assert.equal(onScreen(file, s), s);
    }),
    { numRuns: 500 },
  );
});

/**
 * One choke point: the CLI writes its own text through out() and err()
 * (cli/output.ts). These are the only other writes to stdout and stderr, each
 * with why it must not be escaped (they too take the streams from output.ts). A new one fails here until it is either
 * routed through output.ts or listed with its reason.
 */
const RAW_WRITES: Record<string, string> = {
  'cli/commands/run.ts|if (!state.json) return (type === FRAME_STDOUT ? stdout() : stderr()).write(data);': "a job's own output, byte for byte",
  'cli/tty.ts|stdout.write(a.bytes, () => act(client.written(n)));': "a terminal job's own output, byte for byte",
  "cli/tty.ts|stdout.write('', () => finish(o.exitCodeOf(a.exit, interrupted)));": 'an empty write, to wait for the output to drain',
};

test("the CLI writes its own text only through cli/output.ts; the other writes are a job's bytes", () => {
  const root = join(import.meta.dirname, '..', '..');
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
    });
  const found: string[] = [];
  for (const file of files(join(root, 'cli'))) {
    const rel = relative(root, file);
    if (rel === 'cli/output.ts') continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (/\b(?:std(?:out|err)(?:\(\))?|process\[\w+\])\)?\.write\(/.test(line)) found.push(`${rel}|${line.trim()}`);
      // Even those take the stream from output.ts's stdout() and stderr(), so that rc's exit waits for what they wrote.
      assert.doesNotMatch(line, /process\.std(?:out|err)\b|process\[/, `${rel}: take the stream from stdout() or stderr() in cli/output.ts`);
    }
  }
  assert.deepEqual(found.sort(), Object.keys(RAW_WRITES).sort(), "write rc's own text with out() or err() from cli/output.ts");
});
