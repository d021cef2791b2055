import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { formatDuration, parseDuration } from '../../core/duration';

test('durations as people write them', () => {
  assert.equal(parseDuration('90s'), 90);
  assert.equal(parseDuration('10m'), 600);
  assert.equal(parseDuration('2h'), 7200);
  assert.equal(parseDuration('1h30m'), 5400);
  assert.equal(parseDuration('7d'), 604800);
  assert.equal(parseDuration('45'), 45);
  assert.equal(parseDuration('0'), 0);
  for (const bad of ['', 'soon', '1.5h', '-1m', '10 m', 'm', '1w', '2h-']) assert.equal(parseDuration(bad), null, bad);
});

test('formatting round-trips', () => {
  assert.equal(formatDuration(5400), '1h30m');
  assert.equal(formatDuration(600), '10m');
  fc.assert(fc.property(fc.integer({ min: 1, max: 30 * 86400 }), (s) => parseDuration(formatDuration(s)) === s));
});
