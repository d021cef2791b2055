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
