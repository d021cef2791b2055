import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { MAX_ARRAY_INDEX, MAX_ARRAY_TASKS, parseArraySpec, parseTaskRef } from '../../core/array-spec';

const ok = (text: string) => {
  const r = parseArraySpec(text);
  assert.ok(r.ok, `${text}: ${r.ok ? '' : r.message}`);
  return r;
};
const refused = (text: string, says: RegExp) => {
  const r = parseArraySpec(text);
  assert.ok(!r.ok, `${text} was accepted`);
  assert.match(r.message, says, text);
  // One sentence, naming what was given.
  assert.ok(!r.message.includes('\n'), text);
};

test('ranges, lists, steps, mixtures and a cap', () => {
  assert.deepEqual(ok('0-3'), { ok: true, indexes: [0, 1, 2, 3], maxRunning: null });
  assert.deepEqual(ok('1,5,7').indexes, [1, 5, 7]);
  assert.deepEqual(ok('0-20:5').indexes, [0, 5, 10, 15, 20]);
  assert.deepEqual(ok('0-9:4').indexes, [0, 4, 8]);
  assert.deepEqual(ok('30-40:5,0-2,20').indexes, [0, 1, 2, 20, 30, 35, 40]);
  assert.equal(ok('0-99%8').maxRunning, 8);
  assert.equal(ok('0-99%8').indexes.length, 100);
  assert.deepEqual(ok('7').indexes, [7]);
  assert.equal(ok(`0-${MAX_ARRAY_TASKS - 1}`).indexes.length, MAX_ARRAY_TASKS);
  assert.deepEqual(ok(`${MAX_ARRAY_INDEX}`).indexes, [MAX_ARRAY_INDEX]);
  assert.equal(ok('0-1%50').maxRunning, 50);
});

test('each mistake is refused with a sentence that says which', () => {
  refused('', /needs the task indexes/);
  refused('0-99%0', /%0 would never run/);
  refused('0-99%', /cap after %/);
  refused('0-99%x', /cap after %/);
  refused('0-99%8%2', /one % at most/);
  refused('0-10:0', /step of 0/);
  refused('5-1', /a range goes up/);
  refused('1,,2', /is not an index/);
  refused('a-b', /is not an index/);
  refused('-1', /is not an index/);
  refused('1 - 5', /is not an index/);
  refused('0-9,5', /index 5 is named twice/);
  refused(`0-${MAX_ARRAY_TASKS}`, /more than 10,000 tasks/);
  refused('0-1000000', /more than 10,000 tasks/);
  refused(`${MAX_ARRAY_INDEX + 1}`, /at most 1,000,000/);
  refused('99999999999999999999', /at most 1,000,000/);
});

test('property: a list of distinct indexes comes back sorted, a range has its counted size', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 0, max: MAX_ARRAY_INDEX }), { minLength: 1, maxLength: 200 }), (xs) => {
      const r = parseArraySpec(xs.join(','));
      return r.ok && JSON.stringify(r.indexes) === JSON.stringify([...xs].sort((a, b) => a - b));
    }),
  );
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 1, max: 50 }), (from, len, step) => {
      const r = parseArraySpec(`${from}-${from + len}:${step}`);
      if (!r.ok) return false;
      return r.indexes.length === Math.floor(len / step) + 1 && r.indexes.every((i, k) => i === from + k * step);
    }),
  );
  // Never throws, whatever it is given.
  fc.assert(fc.property(fc.string(), (s) => typeof parseArraySpec(s).ok === 'boolean'));
});

test('a task reference is an array id and an index', () => {
  assert.deepEqual(parseTaskRef('a0123456789:7'), { arrayId: 'a0123456789', index: 7 });
  assert.equal(parseTaskRef('a0123456789'), null);
  assert.equal(parseTaskRef('j0123456789:7'), null);
  assert.equal(parseTaskRef('a0123456789:-1'), null);
  assert.equal(parseTaskRef('a0123456789:99999999'), null);
});
