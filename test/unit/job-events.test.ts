// Following a job's events (server/job-events.ts): a start heard before its
// follower subscribed (a job claimed here for another controller's worker
// can be started there, and told back, before the submit here subscribes).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JobEvents, type JobItem } from '../../server/job-events';
import type { JobEvent } from '../../protocol/wire';

const started = (jobId: string): JobEvent => ({ type: 'started', jobId, host: 'h', devices: ['h:gpu0'] });

test('a start told before anyone here followed the job reaches its follower, after what it writes first', async () => {
  const events = new JobEvents();
  events.remoteEvent('j1', started('j1'));
  const got: string[] = [];
  events.subscribe('j1', (item: JobItem) => got.push(item.kind === 'event' ? item.event.type : `out ${item.seq}`));
  got.push('queued (written by the subscriber)');
  events.output('j1', 1, 1, Buffer.from('x'));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(got, ['queued (written by the subscriber)', 'started', 'out 1']);
});

test('only that job gets it, once; a job never followed keeps nothing for long (bounded)', async () => {
  const events = new JobEvents();
  events.remoteEvent('j2', started('j2'));
  const other: JobItem[] = [];
  events.subscribe('j3', (item) => other.push(item));
  const first: JobItem[] = [];
  const off = events.subscribe('j2', (item) => first.push(item));
  await new Promise((r) => setImmediate(r));
  off();
  const again: JobItem[] = [];
  events.subscribe('j2', (item) => again.push(item));
  await new Promise((r) => setImmediate(r));
  assert.equal(other.length, 0);
  assert.equal(first.length, 1);
  assert.equal(again.length, 0, 'told once');
  for (let i = 0; i < 5000; i++) events.remoteEvent(`k${i}`, started(`k${i}`));
  const old: JobItem[] = [];
  events.subscribe('k0', (item) => old.push(item));
  await new Promise((r) => setImmediate(r));
  assert.equal(old.length, 0, 'the oldest went');
});
