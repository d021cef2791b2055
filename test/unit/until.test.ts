import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deviceFreesAt, freesBy, holdersToBound, type UntilDevice, untilOf } from '../../core/until';
import { localClock, untilShort, untilText } from '../../core/until-text';
import { job, terms } from '../helpers/schedule';

const NOW = Date.parse('2027-01-01T12:00:00Z');
const MIN = 60_000;

const dev = (hostName: string, index: number, state: UntilDevice['state'], holder: string | null = null, over: Partial<UntilDevice> = {}): UntilDevice => ({
  id: hostName.charCodeAt(0) * 100 + index,
  name: `${hostName}:gpu${index}`,
  hostName,
  labels: { kind: 'gpu' },
  state,
  hostOff: false,
  holder: holder ? { jobId: holder } : null,
  ...over,
});

test('a device frees now when free, by its holder bound when busy, never when off, quarantined or offline', () => {
  const bounds = new Map<string, number | null>([
    ['r10', NOW + 10 * MIN],
    ['open', null],
  ]);
  assert.equal(deviceFreesAt(dev('a', 0, 'free'), bounds, NOW), NOW);
  assert.equal(deviceFreesAt(dev('a', 0, 'busy', 'r10'), bounds, NOW), NOW + 10 * MIN);
  assert.equal(deviceFreesAt(dev('a', 0, 'busy', 'open'), bounds, NOW), null);
  // A holder the caller did not load a bound for has none known.
  assert.equal(deviceFreesAt(dev('a', 0, 'busy', 'other'), bounds, NOW), null);
  // Busy on a host turned off: its job ends, and the device takes no new one.
  assert.equal(deviceFreesAt(dev('a', 0, 'busy', 'r10', { hostOff: true }), bounds, NOW), undefined);
  for (const s of ['off', 'unhealthy', 'offline'] as const) assert.equal(deviceFreesAt(dev('a', 0, s, 'r10'), bounds, NOW), undefined, s);
});

test('one GPU: the earliest bound; a device without one does not hide the others', () => {
  assert.equal(
    freesBy(
      [
        { hostName: 'a', at: NOW + 20 * MIN },
        { hostName: 'a', at: null },
        { hostName: 'b', at: NOW + 5 * MIN },
        { hostName: 'b', at: undefined },
      ],
      1,
    ),
    NOW + 5 * MIN,
  );
  assert.equal(freesBy([{ hostName: 'a', at: null }], 1), null);
  assert.equal(freesBy([], 1), null);
});

test('several GPUs: the k-th earliest on one host, the earliest host; a host with too few known has no bound', () => {
  const devices = [
    { hostName: 'a', at: NOW + 5 * MIN },
    { hostName: 'a', at: NOW + 30 * MIN },
    { hostName: 'b', at: NOW + 10 * MIN },
    { hostName: 'b', at: NOW + 20 * MIN },
    { hostName: 'c', at: NOW + 1 * MIN },
    { hostName: 'c', at: null },
  ];
  // Two on one host: a by 30m, b by 20m, c never known: 20m (not the 5m and 1m of two hosts).
  assert.equal(freesBy(devices, 2), NOW + 20 * MIN);
  assert.equal(freesBy(devices, 3), null);
  assert.equal(freesBy(devices, 1), NOW + 1 * MIN);
});

test('the fleet of the e2e test: runs of 10m and 20m and a hold of 5m give 5m; only a job without a limit gives none', () => {
  const fleet = [
    dev('a', 0, 'busy', 'r10'),
    dev('a', 1, 'busy', 'r20'),
    dev('b', 0, 'busy', 'h5'),
    dev('c', 0, 'busy', 'open', { labels: { kind: 'gpu', pool: 'x' } }),
  ];
  const bounds = new Map<string, number | null>([
    ['r10', NOW + 10 * MIN],
    ['r20', NOW + 20 * MIN],
    ['h5', NOW + 5 * MIN],
    ['open', null],
  ]);
  const got = untilOf([job('j1'), job('j2', { terms: terms('pool=x') }), job('j3', { gpus: 2 }), job('j4', { deviceName: 'a:gpu1' })], fleet, bounds, NOW);
  assert.equal(got.get('j1'), NOW + 5 * MIN);
  assert.equal(got.get('j2'), null);
  assert.equal(got.get('j3'), NOW + 20 * MIN, 'two on host a');
  assert.equal(got.get('j4'), NOW + 20 * MIN, '-d names the one device');
  assert.deepEqual(holdersToBound(fleet).sort(), ['h5', 'open', 'r10', 'r20']);
});

test('--gpu choices: the earliest choice; a free matching device is free now', () => {
  const fleet = [
    dev('a', 0, 'busy', 'r10', { labels: { kind: 'gpu', gpu_model: 'A100' } }),
    dev('b', 0, 'busy', 'r20', { labels: { kind: 'gpu', gpu_model: 'H100' } }),
    dev('b', 1, 'free', null, { labels: { kind: 'gpu', gpu_model: 'H100' } }),
  ];
  const bounds = new Map<string, number | null>([
    ['r10', NOW + 10 * MIN],
    ['r20', NOW + 20 * MIN],
  ]);
  const choices = [
    { label: 'A100', terms: terms('gpu_model=A100'), gpus: 1 },
    { label: 'H100:2', terms: terms('gpu_model=H100'), gpus: 2 },
  ];
  const withChoices = job('j1', { terms: choices[0]!.terms, choices });
  assert.equal(untilOf([withChoices], fleet, bounds, NOW).get('j1'), NOW + 10 * MIN);
  assert.equal(untilOf([job('j2', { terms: terms('gpu_model=H100') })], fleet, bounds, NOW).get('j2'), NOW);
});

test('the sentence: a time and how far off, free now, or no bound known', () => {
  const clock = (d: Date) => d.toISOString().slice(11, 19);
  assert.equal(
    untilText(new Date(NOW + 5 * MIN).toISOString(), 1, NOW, clock),
    'a matching device frees by 12:05:00 (in 5m) at the latest, if nothing else changes',
  );
  assert.equal(
    untilText(new Date(NOW + 90 * MIN).toISOString(), 2, NOW, clock),
    '2 matching devices on one host free by 13:30:00 (in 1h30m) at the latest, if nothing else changes',
  );
  assert.equal(untilText(new Date(NOW).toISOString(), 1, NOW, clock), 'a matching device is free now');
  assert.match(untilText(null, 1, NOW, clock), /^no bound is known/);
  assert.equal(untilShort(new Date(NOW + 5 * MIN).toISOString(), NOW, clock), 'by 12:05:00 (in 5m)');
  assert.equal(untilShort(new Date(NOW - 1000).toISOString(), NOW, clock), 'free now');
  assert.equal(untilShort(null, NOW, clock), 'no bound known');
});

test('the clock: the time of day today, the date another day', () => {
  const now = new Date(2027, 0, 1, 12, 0, 0).getTime();
  const clock = localClock(now);
  assert.equal(clock(new Date(2027, 0, 1, 14, 5, 9)), '14:05:09');
  assert.equal(clock(new Date(2027, 0, 2, 9, 3, 0)), '2027-01-02 09:03');
});
