import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Ring } from '../../server/tty';

test('the ring keeps the last cap bytes and counts every byte it was given', () => {
  const r = new Ring(10);
  r.append(Buffer.from('abcdef'));
  r.append(Buffer.from('ghijkl'));
  assert.equal(r.bytes, 10);
  assert.equal(r.total, 12);
  assert.equal(r.start, 2);
  assert.deepEqual(r.since(0), { offset: 2, data: Buffer.from('cdefghijkl') });
  assert.deepEqual(r.since(9), { offset: 9, data: Buffer.from('jkl') });
  assert.deepEqual(r.since(12), { offset: 12, data: Buffer.alloc(0) });
  assert.deepEqual(r.since(99), { offset: 12, data: Buffer.alloc(0) });
  r.append(Buffer.from('0123456789ABCDEF'));
  assert.deepEqual(r.since(0), { offset: 18, data: Buffer.from('6789ABCDEF') });
});

test("whatever is appended, the ring holds exactly the stream's last cap bytes", () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 64 }), fc.array(fc.uint8Array({ maxLength: 100 }), { maxLength: 30 }), (cap, chunks) => {
      const r = new Ring(cap);
      for (const c of chunks) r.append(Buffer.from(c));
      const all = Buffer.concat(chunks.map((c) => Buffer.from(c)));
      assert.ok(r.bytes <= cap);
      assert.equal(r.total, all.length);
      assert.deepEqual(r.since(0).data, all.subarray(Math.max(0, all.length - cap)));
    }),
  );
});
