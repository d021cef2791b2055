import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatSize, parseSize } from '../../core/size';

const GiB = 1024 ** 3;

describe('parseSize', () => {
  test('units are powers of 1024, with optional B or iB in any case', () => {
    for (const text of ['40G', '40GB', '40GiB', '40g', '40gb', '40gib', '40Gb']) {
      assert.equal(parseSize(text), 40 * GiB, text);
    }
    assert.equal(parseSize('1K'), 1024);
    assert.equal(parseSize('1M'), 1024 ** 2);
    assert.equal(parseSize('1T'), 1024 ** 4);
  });

  test('decimals, bare numbers and negative numbers', () => {
    assert.equal(parseSize('1.5K'), 1536);
    assert.equal(parseSize('1.5T'), 1.5 * 1024 ** 4);
    assert.equal(parseSize('8'), 8);
    assert.equal(parseSize('-3'), -3);
    assert.equal(parseSize('85899345920'), 80 * GiB);
    assert.ok(Object.is(parseSize('-0'), 0), 'no negative zero');
  });

  test('anything else is null', () => {
    for (const text of ['', ' 40G', '40G ', '40Q', '40B', 'G', '1.', '.5', '1e3', '+3', '40 G', 'abc', '1.5.3', '0x10', 'Infinity', 'NaN']) {
      assert.equal(parseSize(text), null, JSON.stringify(text));
    }
  });

  test('results are always finite', () => {
    assert.equal(parseSize('9'.repeat(400)), null);
    assert.equal(parseSize(`${'9'.repeat(300)}T`), null);
  });

  test('property: never throws, and any result is a finite number', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const result = parseSize(text);
        assert.ok(result === null || Number.isFinite(result));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('formatSize', () => {
  test('largest unit that gives at least 1, one decimal at most', () => {
    assert.equal(formatSize(25769803776), '24G');
    assert.equal(formatSize(1536), '1.5K');
    assert.equal(formatSize(512), '512');
    assert.equal(formatSize(0), '0');
    assert.equal(formatSize(1024), '1K');
    assert.equal(formatSize(80 * GiB), '80G');
    assert.equal(formatSize(2048 * 1024 ** 4), '2048T');
    assert.equal(formatSize(-1536), '-1.5K');
  });

  test('rounding up to 1024 moves to the next unit', () => {
    assert.equal(formatSize(1024 * 1023.96), '1M');
  });

  test('property: whole multiples of a unit round-trip exactly', () => {
    // Below 1024 of a unit, that unit is the one shown, so nothing is rounded.
    fc.assert(
      fc.property(fc.integer({ min: -1023, max: 1023 }), fc.integer({ min: 0, max: 4 }), (count, power) => {
        const bytes = count * 1024 ** power;
        assert.equal(parseSize(formatSize(bytes)), bytes === 0 ? 0 : bytes);
      }),
      { numRuns: 3000 },
    );
  });

  test('property: formatted sizes parse back to within rounding', () => {
    fc.assert(
      fc.property(fc.double({ min: -1e15, max: 1e15, noNaN: true }), (bytes) => {
        const back = parseSize(formatSize(bytes));
        assert.notEqual(back, null);
        // One decimal of the chosen unit: at most 5% off once the value is ≥ 1 unit.
        assert.ok(Math.abs((back ?? 0) - bytes) <= Math.max(0.05, Math.abs(bytes) * 0.05), `${bytes} → ${formatSize(bytes)}`);
      }),
      { numRuns: 3000 },
    );
  });
});
