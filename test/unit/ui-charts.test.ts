// The pure parts behind the dashboard's pictures: the usage chart's buckets
// (leases split at bucket edges, the idle part in proportion, the rest of the
// keys summed), the audit export's CSV quoting, and the exact local time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditCsv, auditJson, csvField } from '../../components/audit-export';
import { exactTime } from '../../components/format';
import { bucketUse, SERIES_SHOWN, seriesStep } from '../../core/usage-series';
import type { AuditEntry } from '../../protocol/wire';

test('bucket steps: the shortest that cuts the window into at most 90', () => {
  assert.equal(seriesStep(3600), 60);
  assert.equal(seriesStep(86400), 3600);
  assert.equal(seriesStep(7 * 86400), 3 * 3600);
  assert.equal(seriesStep(30 * 86400), 12 * 3600);
  assert.equal(seriesStep(90 * 86400), 86400);
  assert.equal(seriesStep(366 * 86400), 7 * 86400);
});

test('a lease is split at bucket edges, clipped to the window, its idle seconds in proportion; a running one runs to now', () => {
  const now = 100 * 3600 + 1800; // half past the hour
  const r = bucketUse(
    [
      // 90 min from 97:30 to 99:00, a third of it idle.
      { key: 'alice', fromS: 97.5 * 3600, toS: 99 * 3600, idleS: 1800 },
      // Began before the window (a day back from now), still held: only the part inside counts.
      { key: 'bob', fromS: now - 30 * 3600, toS: null, idleS: null },
      // Ended before the window: nothing.
      { key: 'carol', fromS: 0, toS: 3600, idleS: 0 },
    ],
    86400,
    now,
  );
  assert.equal(r.stepS, 3600);
  // Aligned to the hour: the first bucket begins before the window, the last runs to now.
  assert.equal(r.at[0], 76 * 3600);
  assert.equal(r.at.at(-1), 100 * 3600);
  assert.equal(r.at.length, 25);
  assert.deepEqual(
    r.series.map((s) => s.key),
    ['bob', 'alice'],
    'the most leased first; one with nothing in the window is left out',
  );
  const alice = r.series.find((s) => s.key === 'alice')!;
  const i = r.at.indexOf(97 * 3600);
  assert.deepEqual(alice.leasedS.slice(i, i + 3), [1800, 3600, 0]);
  assert.deepEqual(alice.idleS.slice(i, i + 3), [600, 1200, 0]);
  const bob = r.series.find((s) => s.key === 'bob')!;
  assert.equal(bob.leasedS[0], 1800, 'the first bucket: only its half inside the window');
  assert.equal(bob.leasedS.at(-1), 1800, 'the last: up to now');
  assert.equal(
    bob.leasedS.reduce((a, b) => a + b),
    86400,
  );
  assert.equal(
    bob.idleS.reduce((a, b) => a + b),
    0,
    'no signal is never idle',
  );
  assert.equal(r.others, null);
});

test('past the keys drawn apart, the rest are summed as others', () => {
  const spans = Array.from({ length: SERIES_SHOWN + 3 }, (_, i) => ({ key: `k${i}`, fromS: 0, toS: 100 + i, idleS: 10 }));
  const r = bucketUse(spans, 3600, 3600);
  assert.equal(r.series.length, SERIES_SHOWN);
  assert.equal(r.series[0]!.key, `k${SERIES_SHOWN + 2}`);
  assert.equal(r.others!.keys, 3);
  assert.deepEqual(r.others!.leasedS.slice(0, 3), [180, 40 + 41 + 42, 0], 'k0, k1 and k2 (the least leased), minute by minute');
});

test('CSV fields are quoted where they must be, formulas kept as text; the JSON is the entries', () => {
  assert.equal(csvField('plain'), 'plain');
  assert.equal(csvField('a,b'), '"a,b"');
  assert.equal(csvField('say "hi"'), '"say ""hi"""');
  assert.equal(csvField('two\nlines'), '"two\nlines"');
  assert.equal(csvField(' edge'), '" edge"');
  assert.equal(csvField('=1+2'), "'=1+2");
  assert.equal(csvField('@SUM(A1)'), "'@SUM(A1)");
  assert.equal(csvField('-12'), '-12', 'a negative number stays a number');
  const e: AuditEntry = {
    id: 7,
    at: '2026-12-01T12:00:00.000Z',
    actor: 'admin:ops',
    action: 'host.off',
    target: 'gpubox',
    detail: { reason: 'disk, "bay 3"\nnoon' },
    origin: null,
    tokenId: 3,
  };
  assert.equal(
    auditCsv([e]),
    'id,at,actor,action,target,origin,tokenId,detail\r\n7,2026-12-01T12:00:00.000Z,admin:ops,host.off,gpubox,,3,"{""reason"":""disk, \\""bay 3\\""\\nnoon""}"\r\n',
  );
  assert.deepEqual(JSON.parse(auditJson([e])), [e]);
});

test('the exact time: ISO in the local zone, its offset and its name', () => {
  const was = process.env.TZ;
  try {
    process.env.TZ = 'Asia/Tokyo';
    assert.equal(exactTime('2026-12-01T12:00:00Z'), '2026-12-01T21:00:00+09:00 (Asia/Tokyo)');
    process.env.TZ = 'America/St_Johns';
    assert.equal(exactTime('2026-12-01T12:00:00Z'), '2026-12-01T08:30:00-03:30 (America/St_Johns)');
    process.env.TZ = 'UTC';
    assert.match(exactTime('2026-12-01T12:00:00Z'), /^2026-12-01T12:00:00\+00:00 \((UTC|Etc\/UTC)\)$/);
    assert.equal(exactTime(null), '');
    assert.equal(exactTime('not a time'), '');
  } finally {
    if (was === undefined) delete process.env.TZ;
    else process.env.TZ = was;
  }
});
