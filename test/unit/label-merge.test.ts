import assert from 'node:assert/strict';
import { test } from 'node:test';
import { markEffective, type LabelView } from '../../server/fleet';

const l = (key: string, value: string, source: 'declared' | 'detected', hostWide: boolean): LabelView => ({
  key,
  value,
  source,
  probe: source === 'detected' ? 'p' : null,
  seenAt: '2026-01-01T00:00:00Z',
  stale: null,
  hostWide,
  effective: false,
});
const effective = (ls: LabelView[]) =>
  Object.fromEntries(
    markEffective(ls)
      .filter((x) => x.effective)
      .map((x) => [x.key, x.value]),
  );

test('a declared label beats a detected one with the same key (the operator can correct a probe)', () => {
  assert.deepEqual(effective([l('gpu_model', 'H100', 'detected', false), l('gpu_model', 'H200', 'declared', false)]), { gpu_model: 'H200' });
});

test("a device's own label beats its host's, whatever the source", () => {
  assert.deepEqual(effective([l('rack', 'b12', 'declared', true), l('rack', 'c1', 'detected', false)]), { rack: 'c1' });
});

test('every entry stays listed; only one per key is effective', () => {
  const marked = markEffective([l('a', '1', 'detected', true), l('a', '2', 'declared', true), l('b', '3', 'detected', false)]);
  assert.equal(marked.length, 3);
  assert.deepEqual(
    marked.map((x) => x.effective),
    [false, true, true],
  );
});
