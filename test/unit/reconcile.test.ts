// core/reconcile.ts: a worker's hello against what the database runs on its host.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { NO_LEASE_REASON, reconcile } from '../../core/reconcile';

const job = (id: string, fence: number, killRequestedBy: string | null = null) => ({ id, fence, killRequestedBy });

test('a job reported with its fence is kept; one not reported, or with another fence, is lost', () => {
  const r = reconcile(
    [job('a', 1), job('b', 2), job('c', 3)],
    [
      { jobId: 'a', fence: 1 },
      { jobId: 'c', fence: 9 },
    ],
  );
  assert.deepEqual(
    r.kept.map((j) => j.id),
    ['a'],
  );
  assert.deepEqual(
    r.lost.map((j) => j.id),
    ['b', 'c'],
  );
  // c's old fence runs there without a lease: stopped, under the fence the worker knows it by.
  assert.deepEqual(r.stop, [{ jobId: 'c', fence: 9, reason: NO_LEASE_REASON }]);
});

test('a stop asked while the worker was away is sent again for a kept job, not for a lost one', () => {
  const r = reconcile([job('a', 1, 'killed by alice'), job('b', 2, 'killed by bob')], [{ jobId: 'a', fence: 1 }]);
  assert.deepEqual(r.stop, [{ jobId: 'a', fence: 1, reason: 'killed by alice' }]);
});

test('every running job is kept or lost, never both; every reported job is kept or stopped', () => {
  const ids = fc.constantFrom('a', 'b', 'c', 'd');
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.record({ id: ids, fence: fc.integer({ min: 1, max: 3 }), killRequestedBy: fc.constant(null) }), { selector: (j) => j.id }),
      fc.uniqueArray(fc.record({ jobId: ids, fence: fc.integer({ min: 1, max: 3 }) }), { selector: (r) => r.jobId }),
      (running, reported) => {
        const r = reconcile(running, reported);
        assert.equal(r.kept.length + r.lost.length, running.length);
        const kept = new Set(r.kept.map((j) => j.id));
        for (const rep of reported) assert.ok(kept.has(rep.jobId) !== r.stop.some((s) => s.jobId === rep.jobId));
      },
    ),
  );
});
