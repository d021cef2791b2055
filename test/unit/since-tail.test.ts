// Parsing rc jobs --since (core/since.ts), finding where rc logs --tail starts (core/tail.ts), and spotting --json
// among a command's flags before it parses them (cli/flags.ts asksJson).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseSince } from '../../core/since';
import { TailFinder, type TailStart } from '../../core/tail';
import { asksJson } from '../../cli/flags';
import { RUN_SPECS } from '../../cli/commands/run';

const NOW = Date.parse('2026-05-10T12:00:00Z');

test('--since: a duration back from now, or an ISO date or time', () => {
  assert.equal(parseSince('2h', NOW)?.toISOString(), '2026-05-10T10:00:00.000Z');
  assert.equal(parseSince('7d', NOW)?.toISOString(), '2026-05-03T12:00:00.000Z');
  assert.equal(parseSince('1h30m', NOW)?.toISOString(), '2026-05-10T10:30:00.000Z');
  assert.equal(parseSince('90', NOW)?.toISOString(), '2026-05-10T11:58:30.000Z');
  assert.equal(parseSince('2026-05-01', NOW)?.toISOString(), '2026-05-01T00:00:00.000Z');
  assert.equal(parseSince('2026-05-01T12:00Z', NOW)?.toISOString(), '2026-05-01T12:00:00.000Z');
  assert.equal(parseSince('2026-05-01T12:00:00+02:00', NOW)?.toISOString(), '2026-05-01T10:00:00.000Z');
  assert.equal(parseSince('2026-05-01T12:00:00.5Z', NOW)?.toISOString(), '2026-05-01T12:00:00.500Z');
});

test('--since: nothing else', () => {
  for (const bad of ['', ' ', 'yesterday', '0', '0s', '367d', '-2h', '2 h', '1w', '2026-13-01', '2026-05-01T25:00Z', '05/01/2026', 'now', '2026-05']) {
    assert.equal(parseSince(bad, NOW), null, bad);
  }
});

/** Where TailFinder says the last `lines` lines of `chunks` (oldest first) begin, fed newest first as the controller does. */
function tailOf(chunks: string[], lines: number): TailStart | null {
  const finder = new TailFinder(lines);
  for (let i = chunks.length - 1; i >= 0; i--) {
    const found = finder.push(i + 1, Buffer.from(chunks[i]!));
    if (found) return found;
  }
  return finder.done();
}

/** The text from a TailStart on. */
function textFrom(chunks: string[], start: TailStart | null): string {
  if (!start) return '';
  return chunks[start.seq - 1]!.slice(start.skip) + chunks.slice(start.seq).join('');
}

test('--tail: the last n lines, across chunks, a last line without its newline counted', () => {
  const chunks = ['a\nb\n', 'c', '\nd\ne\n'];
  assert.equal(textFrom(chunks, tailOf(chunks, 1)), 'e\n');
  assert.equal(textFrom(chunks, tailOf(chunks, 2)), 'd\ne\n');
  assert.equal(textFrom(chunks, tailOf(chunks, 3)), 'c\nd\ne\n');
  assert.deepEqual(tailOf(chunks, 3), { seq: 1, skip: 4 });
  assert.equal(textFrom(chunks, tailOf(chunks, 5)), 'a\nb\nc\nd\ne\n');
  assert.equal(textFrom(chunks, tailOf(chunks, 50)), 'a\nb\nc\nd\ne\n');
  assert.equal(textFrom(['x\ny'], tailOf(['x\ny'], 1)), 'y');
  // 0 lines: nothing of what is stored (rc logs -f --tail 0 shows only what comes next).
  assert.equal(textFrom(chunks, tailOf(chunks, 0)), '');
  assert.equal(tailOf([], 3), null);
});

test('--tail agrees with splitting the whole text into lines, however it is chunked', () => {
  const piece = fc.stringMatching(/^[ab\n]{0,6}$/);
  fc.assert(
    fc.property(fc.array(piece, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 12 }), (chunks, n) => {
      chunks = chunks.filter((c) => c.length > 0);
      const whole = chunks.join('');
      const lines = whole.split(/(?<=\n)/).filter(Boolean);
      assert.equal(textFrom(chunks, tailOf(chunks, n)), lines.slice(-n).join(''));
    }),
  );
});

test('--json is seen before a command parses its flags: not past --, nor past rc run’s command', () => {
  assert.equal(asksJson(['--json'], null), true);
  assert.equal(asksJson(['j0123456789', '--json'], null), true);
  assert.equal(asksJson(['--', '--json'], null), false);
  assert.equal(asksJson(['--json', '--', 'x'], RUN_SPECS), true);
  assert.equal(asksJson(['--detach', '--json', '--', 'x'], RUN_SPECS), true);
  assert.equal(asksJson(['--name', 'a', '--json', 'echo'], RUN_SPECS), true);
  assert.equal(asksJson(['-s', 'vram>=1G', 'echo', '--json'], RUN_SPECS), false);
  assert.equal(asksJson(['--name=a', 'echo', '--json'], RUN_SPECS), false);
  assert.equal(asksJson(['echo', '--json'], RUN_SPECS), false);
});
