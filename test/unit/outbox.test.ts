import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OutputOutbox } from '../../worker/outbox';

const chunk = (jobId: string, seq: number, text = `c${seq}`) => ({ jobId, fence: 1, seq, stream: 1 as const, data: Buffer.from(text) });

test('unacknowledged chunks are kept and resent after the resume point, in order, once', () => {
  const box = new OutputOutbox();
  for (let i = 1; i <= 5; i++) box.add(chunk('j', i));
  box.add(chunk('k', 1));
  box.ack('j', 2);
  assert.deepEqual(
    box.after('j', 0).map((c) => c.seq),
    [3, 4, 5],
    'acknowledged chunks are gone',
  );
  assert.deepEqual(
    box.after('j', 4).map((c) => c.seq),
    [5],
    'the controller already has up to 4',
  );
  assert.deepEqual(
    box.after('k', 0).map((c) => c.seq),
    [1],
    'jobs are kept apart',
  );
  box.forget('j');
  assert.deepEqual(box.after('j', 0), []);
  assert.deepEqual(box.jobIds(), ['k']);
});

test('chunks let go of past the bound are said to be lost on the first chunk resent after them, never silently skipped', () => {
  const box = new OutputOutbox(64 * 1024);
  const big = 'x'.repeat(20 * 1024);
  for (let i = 1; i <= 10; i++) box.add(chunk('j', i, big));
  const resent = box.after('j', 2);
  // Three 20 KiB chunks fit in 64 KiB: 8, 9, 10 are kept; 3..7 are gone, and the first resent says so.
  assert.deepEqual(
    resent.map((c) => [c.seq, c.lostFrom]),
    [
      [8, 3],
      [9, undefined],
      [10, undefined],
    ],
  );
  assert.equal(box.after('j', 8)[0]!.lostFrom, undefined, 'nothing lost after what the controller has');
  assert.deepEqual(
    box.after('j', null).map((c) => [c.seq, c.lostFrom]),
    [
      [8, undefined],
      [9, undefined],
      [10, undefined],
    ],
    'the controller did not say where it is: everything, and no claim of a loss',
  );
});
