// GPU sample retention (server/sample-retention.ts) on a real Postgres: raw
// samples older than the raw retention become 10-minute rows of
// gpu_samples_coarse (utilisation averaged, memory at its peak, counted) and
// go; coarse rows older than the coarse retention go; a second run, or two
// controllers at once, count no sample twice; GET /api/samples's 7d and 90d
// windows read both tables as one series, the same before and after a prune.
import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { connect, type Database } from '../../server/db';
import { loadSamples } from '../../server/samples';
import { PRUNE_LOCK, pruneGpuSamples, rollUpSamples, SAMPLE_RETENTION } from '../../server/sample-retention';
import { freshDatabase } from '../helpers/db';

let db: Database;
let drop: () => Promise<void>;

before(async () => {
  const fresh = await freshDatabase();
  db = fresh.database;
  drop = fresh.drop;
  await db.client`insert into hosts (name) values ('h')`;
  await db.client`insert into devices (host_name, index) values ('h', 0), ('h', 1)`;
});
after(async () => drop());
beforeEach(async () => {
  await db.client`delete from gpu_samples`;
  await db.client`delete from gpu_samples_coarse`;
});

const DAY = 86400;
const TOTAL = 81920;
const now = () => Date.now() / 1000;
const bucket = (t: number) => Math.floor(t / 600) * 600;

interface Raw {
  host: string;
  index: number;
  t: number;
  util: number | null;
  mem: number;
}

async function insertRaw(rows: Raw[]): Promise<void> {
  if (!rows.length) return;
  await db.client`
    insert into gpu_samples (host_name, device_index, at, mem_used_mib, mem_total_mib, util_pct)
    select h, i, to_timestamp(t), m, ${TOTAL}, u
    from unnest(${rows.map((r) => r.host)}::text[], ${rows.map((r) => r.index)}::int[], ${rows.map((r) => r.t)}::float8[],
      ${rows.map((r) => r.mem)}::int[], ${rows.map((r) => r.util)}::int[]) as x(h, i, t, m, u)`;
}

interface Coarse {
  host: string;
  index: number;
  t: number;
  utilPct: number | null;
  utilSum: number;
  utilSamples: number;
  mem: number;
  total: number;
  samples: number;
}

async function insertCoarse(c: Omit<Coarse, 'utilPct'>): Promise<void> {
  await db.client`
    insert into gpu_samples_coarse (host_name, device_index, at, util_sum, util_samples, mem_used_mib, mem_total_mib, samples)
    values (${c.host}, ${c.index}, to_timestamp(${c.t}), ${c.utilSum}, ${c.utilSamples}, ${c.mem}, ${c.total}, ${c.samples})`;
}

async function coarseRows(): Promise<Coarse[]> {
  // A plain array: the rows are compared with deepStrictEqual.
  const rows = await db.client<Coarse[]>`
    select host_name as host, device_index as index, extract(epoch from at)::float8 as t, util_pct, util_sum, util_samples,
      mem_used_mib as mem, mem_total_mib as total, samples
    from gpu_samples_coarse order by 1, 2, 3`;
  return [...rows];
}

async function rawTimes(): Promise<[string, number, number][]> {
  const rows = await db.client<{ host: string; index: number; t: number }[]>`
    select host_name as host, device_index as index, extract(epoch from at)::float8 as t from gpu_samples order by 1, 2, 3`;
  return rows.map((r) => [r.host, r.index, r.t]);
}

/** What the coarse table should hold for these raw rows, worked out here. */
function expectedCoarse(rows: Raw[]): Coarse[] {
  const by = new Map<string, Coarse>();
  for (const r of rows) {
    const t = bucket(r.t);
    const key = `${r.host}\0${String(r.index).padStart(4, '0')}\0${t}`;
    const c = by.get(key) ?? { host: r.host, index: r.index, t, utilPct: null, utilSum: 0, utilSamples: 0, mem: 0, total: TOTAL, samples: 0 };
    c.samples += 1;
    c.mem = Math.max(c.mem, r.mem);
    if (r.util !== null) {
      c.utilSum += r.util;
      c.utilSamples += 1;
    }
    c.utilPct = c.utilSamples ? c.utilSum / c.utilSamples : null;
    by.set(key, c);
  }
  return [...by.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, c]) => c);
}

/** Devices × a sample a minute over `hours`, from `from` on: utilisation and memory vary by device and time. */
function fleetRows(devices: number, from: number, hours: number): Raw[] {
  const rows: Raw[] = [];
  for (let d = 0; d < devices; d++)
    for (let k = 0; k < hours * 60; k++)
      rows.push({ host: `g${d % 3}`, index: d, t: from + k * 60 + 7, util: k % 7 === 0 ? null : (k * 13 + d) % 101, mem: (k * 37 + d * 11) % 5000 });
  return rows;
}

test('raw samples older than a day become 10-minute rows (utilisation averaged, memory at its peak, counted) and go; a second run changes nothing', async () => {
  const b1 = bucket(now() - 3 * DAY);
  const cut = bucket(now() - DAY);
  const old: Raw[] = [
    { host: 'h', index: 0, t: b1 + 10, util: 10, mem: 100 },
    { host: 'h', index: 0, t: b1 + 200, util: 20, mem: 300 },
    { host: 'h', index: 0, t: b1 + 590, util: null, mem: 200 },
    { host: 'h', index: 0, t: b1 + 601, util: 50, mem: 50 },
    { host: 'h', index: 1, t: b1 + 30, util: null, mem: 7 },
    // The last whole bucket before the cut.
    { host: 'h', index: 0, t: cut - 5, util: 90, mem: 30 },
  ];
  const kept: Raw[] = [
    // In the bucket the cut falls in: it is not whole yet, it stays raw.
    { host: 'h', index: 0, t: cut + 5, util: 80, mem: 20 },
    { host: 'h', index: 0, t: now() - 3600, util: 70, mem: 10 },
  ];
  await insertRaw([...old, ...kept]);

  const first = await pruneGpuSamples(db.client);
  assert.deepEqual(first, { rolled: 6, coarseDropped: 0 });
  const rows = await coarseRows();
  assert.deepEqual(rows, [
    { host: 'h', index: 0, t: b1, utilPct: 15, utilSum: 30, utilSamples: 2, mem: 300, total: TOTAL, samples: 3 },
    { host: 'h', index: 0, t: b1 + 600, utilPct: 50, utilSum: 50, utilSamples: 1, mem: 50, total: TOTAL, samples: 1 },
    { host: 'h', index: 0, t: cut - 600, utilPct: 90, utilSum: 90, utilSamples: 1, mem: 30, total: TOTAL, samples: 1 },
    { host: 'h', index: 1, t: b1, utilPct: null, utilSum: 0, utilSamples: 0, mem: 7, total: TOTAL, samples: 1 },
  ]);
  assert.deepEqual(expectedCoarse(old), rows, 'the test works it out the same way');
  const left = await rawTimes();
  assert.deepEqual(
    left.map(([, , t]) => Math.round(t)),
    kept.map((r) => Math.round(r.t)),
    'only the raw rows younger than the cut (or in its bucket) stay',
  );

  const second = await pruneGpuSamples(db.client);
  assert.deepEqual(second, { rolled: 0, coarseDropped: 0 });
  assert.deepEqual(await coarseRows(), rows, 'a second run counts nothing twice');
  assert.deepEqual(await rawTimes(), left);
});

test('a bucket already in the coarse table takes more samples in: the average weighted, the peak kept, the counts added', async () => {
  const b = bucket(now() - 2 * DAY);
  await insertCoarse({ host: 'h', index: 0, t: b, utilSum: 80, utilSamples: 2, mem: 500, total: TOTAL, samples: 3 });
  await insertCoarse({ host: 'h', index: 1, t: b, utilSum: 0, utilSamples: 0, mem: 900, total: TOTAL, samples: 1 });
  await insertRaw([
    { host: 'h', index: 0, t: b + 60, util: 10, mem: 600 },
    { host: 'h', index: 0, t: b + 120, util: null, mem: 100 },
    { host: 'h', index: 1, t: b + 60, util: 20, mem: 100 },
  ]);
  assert.deepEqual(await pruneGpuSamples(db.client), { rolled: 3, coarseDropped: 0 });
  assert.deepEqual(await coarseRows(), [
    { host: 'h', index: 0, t: b, utilPct: 30, utilSum: 90, utilSamples: 3, mem: 600, total: TOTAL, samples: 5 },
    { host: 'h', index: 1, t: b, utilPct: 20, utilSum: 20, utilSamples: 1, mem: 900, total: TOTAL, samples: 2 },
  ]);
});

test('coarse rows older than 90 days go; the retention periods are settings', async () => {
  assert.deepEqual(SAMPLE_RETENTION, { rawDays: 1, coarseDays: 90 });
  const c = { host: 'h', index: 0, utilSum: 10, utilSamples: 1, mem: 1, total: TOTAL, samples: 1 };
  await insertCoarse({ ...c, t: bucket(now() - 91 * DAY) });
  await insertCoarse({ ...c, t: bucket(now() - 89 * DAY) });
  assert.deepEqual(await pruneGpuSamples(db.client), { rolled: 0, coarseDropped: 1 });
  assert.deepEqual(
    (await coarseRows()).map((r) => r.t),
    [bucket(now() - 89 * DAY)],
  );

  // Two days raw, thirty coarse.
  await insertRaw([
    { host: 'h', index: 0, t: now() - 1.5 * DAY, util: 1, mem: 1 },
    { host: 'h', index: 0, t: now() - 2.5 * DAY, util: 2, mem: 2 },
  ]);
  await insertCoarse({ ...c, t: bucket(now() - 31 * DAY) });
  assert.deepEqual(await pruneGpuSamples(db.client, { rawDays: 2, coarseDays: 30 }), { rolled: 1, coarseDropped: 2 });
  assert.deepEqual(
    (await coarseRows()).map((r) => r.t),
    [bucket(now() - 2.5 * DAY)],
  );
  assert.equal((await rawTimes()).length, 1);
});

test('bounded batches: many devices and hours roll up a few devices and a span at a time, to the same rows', async () => {
  const rows = fleetRows(7, bucket(now() - 2 * DAY), 3);
  await insertRaw(rows);
  // Two devices and half an hour of each per statement.
  const rolled = await rollUpSamples(db.client, 1, { devices: 2, spanS: 1800 });
  assert.equal(rolled, rows.length);
  assert.deepEqual(await coarseRows(), expectedCoarse(rows));
  assert.equal((await rawTimes()).length, 0);
});

test('two controllers rolling up at once count every sample once', async () => {
  const rows = fleetRows(9, bucket(now() - 3 * DAY), 4);
  await insertRaw(rows);
  const a = connect(db.url, 2);
  const b = connect(db.url, 2);
  try {
    // Past the lock (rollUpSamples takes none): the statements alone must be safe together.
    const [x, y] = await Promise.all([rollUpSamples(a.client, 1, { devices: 3, spanS: 600 }), rollUpSamples(b.client, 1, { devices: 2, spanS: 1200 })]);
    assert.equal(x + y, rows.length, `rolled ${x} + ${y}`);
    assert.deepEqual(await coarseRows(), expectedCoarse(rows));

    // And whole prunes at once: the lock lets one do the work, the other finds nothing left or skips.
    await db.client`delete from gpu_samples_coarse`;
    await insertRaw(rows);
    const [p, q] = await Promise.all([pruneGpuSamples(a.client), pruneGpuSamples(b.client)]);
    assert.equal((p?.rolled ?? 0) + (q?.rolled ?? 0), rows.length);
    assert.deepEqual(await coarseRows(), expectedCoarse(rows));
  } finally {
    await a.close();
    await b.close();
  }
});

test('while another controller prunes (it holds the lock), a prune does nothing', async () => {
  await insertRaw([{ host: 'h', index: 0, t: now() - 2 * DAY, util: 5, mem: 5 }]);
  const other = await db.client.reserve();
  try {
    await other`select pg_advisory_lock(${PRUNE_LOCK})`;
    assert.equal(await pruneGpuSamples(db.client), null);
    assert.equal((await rawTimes()).length, 1);
  } finally {
    await other`select pg_advisory_unlock(${PRUNE_LOCK})`;
    other.release();
  }
  assert.deepEqual(await pruneGpuSamples(db.client), { rolled: 1, coarseDropped: 0 });
});

test('the 7d and 90d windows: one series from coarse rows and raw rows not rolled up yet, the same before a prune and after', async () => {
  // The windows move with the clock, by the hour: a run crossing an hour between its reads would compare two
  // different weeks (it failed so at 12:00:00 once). Close to an hour, it starts after it.
  const toHour = 3600 - (now() % 3600);
  if (toHour < 30) await new Promise((r) => setTimeout(r, (toHour + 1) * 1000));
  // Every 5 minutes for 12 days, through the cut and the edges of the 7-day window.
  const start = now() - 12 * DAY;
  const rows: Raw[] = [];
  for (let k = 0; start + k * 300 < now() - 60; k++)
    rows.push({ host: 'h', index: 0, t: start + k * 300, util: k % 5 === 0 ? null : (k * 17) % 101, mem: (k * 53) % 8000 });
  await insertRaw(rows);
  const device = { hostName: 'h', index: 0 };
  const load = (window: '7d' | '90d') => loadSamples(db.client, { hosts: null, device, window });
  const before7 = await load('7d');
  const before90 = await load('90d');
  assert.equal(before7.length, 1);
  const week = before7[0]!;
  assert.ok(
    week.at.every((t) => t % 3600 === 0),
    'hour buckets',
  );
  assert.ok(week.at.length >= 168 && week.at.length <= 169, `a week of hours: ${week.at.length}`);
  assert.ok(week.at[0]! >= now() - 7 * DAY - 3600, 'from a week ago');
  assert.ok(
    before90[0]!.at.every((t) => t % 21600 === 0),
    'six-hour buckets',
  );
  assert.ok(before90[0]!.at[0]! <= start, 'all twelve days');

  const pruned = await pruneGpuSamples(db.client);
  assert.ok(pruned && pruned.rolled > 10 * 288, `most samples rolled up: ${JSON.stringify(pruned)}`);
  assert.ok((await rawTimes()).length > 0, 'the last day stays raw');
  assert.deepEqual(await load('7d'), before7, 'the week reads the same from both tables');
  assert.deepEqual(await load('90d'), before90);

  // One hour by hand: the coarse part and the raw part of the same series, weighted together.
  const hour = Math.floor((now() - 3 * DAY) / 3600) * 3600;
  const inHour = rows.filter((r) => r.t >= hour && r.t < hour + 3600);
  const utils = inHour.flatMap((r) => (r.util === null ? [] : [r.util]));
  const slot = week.at.indexOf(hour);
  assert.ok(slot >= 0);
  const mean = utils.reduce((s, u) => s + u, 0) / utils.length;
  assert.ok(Math.abs(week.utilPct[slot]! - mean) <= 0.05 + 1e-9, `${week.utilPct[slot]} is ${mean} to 0.1`);
  assert.equal(week.memUsedMiB[slot], Math.max(...inHour.map((r) => r.mem)));
  assert.equal(week.memTotalMiB, TOTAL);
});
