// The dashboard's pure parts: units, what a live change refetches, how a
// host's part patches the fleet, the counts, who may stop what, the
// terminal's button-press rule, and reading the frame stream in a browser.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agoText, bytesText, commandText, countdownText, durationText, labelText, memPairText, vramText } from '../../components/format';
import { byHost, fleetTotals, perModel, shownState } from '../../components/fleet/totals';
import { FrameReader } from '../../components/jobs/frame-reader';
import { MAX_HOST_FETCHES, patchFleet, planRefetch } from '../../components/live-plan';
import { armTerminal, takeArmed, terminalHref } from '../../components/terminal-intent';
import { encodeEvent, encodeOutput } from '../../core/frames';
import { mayStop, stopAs, webSubmitter } from '../../core/web-submitter';
import type { DeviceSummary, Fleet } from '../../protocol/wire';

test('units as people read them', () => {
  assert.equal(bytesText(85_520_809_984), '79.6 GiB');
  assert.equal(bytesText(80 * 1024 ** 3), '80 GiB');
  assert.equal(bytesText(512 * 1024 ** 2), '512 MiB');
  assert.equal(bytesText(-1), '–');
  assert.equal(vramText(String(24 * 1024 ** 3)), '24 GiB');
  assert.equal(vramText('lots'), 'lots');
  assert.equal(vramText(undefined), '–');
  assert.equal(memPairText(20_480, 81_559), '20.0 / 79.6 GiB');
  assert.equal(labelText('disk_free_bytes', String(100 * 1024 ** 3)), '100 GiB');
  assert.equal(labelText('driver_version', '550.54.15'), '550.54.15');
  assert.equal(durationText(45), '45s');
  assert.equal(durationText(12 * 60 + 5), '12 min');
  assert.equal(durationText(3600 + 20 * 60), '1h 20m');
  assert.equal(durationText(3 * 86400 + 4 * 3600), '3d 4h');
  assert.equal(countdownText(7170), '1:59:30');
  assert.equal(countdownText(545), '9:05');
  assert.equal(countdownText(-3), '0:00');
  const now = Date.parse('2026-12-01T12:00:00Z');
  assert.equal(agoText('2026-12-01T11:57:00Z', now), '3 min ago');
  assert.equal(agoText('2026-12-01T12:05:00Z', now), 'in 5 min');
  assert.equal(agoText('2026-12-01T11:59:58Z', now), 'just now');
  assert.equal(agoText(null, now), 'never');
  assert.equal(agoText('not a time', now), '–');
  assert.equal(commandText(['python', 'train.py', '--lr', '1e-3', "it's here"]), `python train.py --lr 1e-3 'it'\\''s here'`);
});

const dev = (host: string, index: number, over: Partial<DeviceSummary> = {}): DeviceSummary => ({
  id: index,
  name: `${host}:gpu${index}`,
  hostName: host,
  index,
  uuid: null,
  hostStatus: 'online',
  state: 'free',
  hostOff: false,
  holder: null,
  reservedFor: null,
  labels: { gpu_model: 'H100' },
  unhealthy: null,
  gpu: null,
  ...over,
});
const fleet = (devices: DeviceSummary[], queued = 0): Fleet => ({
  hosts: [...new Set(devices.map((d) => d.hostName))].map((name) => ({
    name,
    status: 'online',
    lastSeenAt: null,
    workerVersion: null,
    off: null,
    removed: null,
  })),
  devices,
  queued,
});

test('a live change on one host refetches that host; one without a host, or a burst over many, the whole fleet', () => {
  const one = planRefetch([
    { what: 'devices', host: 'a' },
    { what: 'devices', host: 'a' },
    { what: 'devices', host: 'b' },
  ]);
  assert.deepEqual([one.fleet, one.hosts], [false, ['a', 'b']]);
  assert.ok(one.invalidate.some((k) => k.join() === 'host,a'));
  assert.equal(planRefetch([{ what: 'devices' }]).fleet, true);
  const burst = planRefetch(Array.from({ length: MAX_HOST_FETCHES + 1 }, (_, i) => ({ what: 'devices' as const, host: `h${i}` })));
  assert.deepEqual([burst.fleet, burst.hosts], [true, []]);
  const job = planRefetch([{ what: 'jobs', jobId: 'j1' }]);
  assert.equal(job.fleet, false);
  for (const k of ['jobs', 'queue', 'holds', 'job,j1', 'teams'])
    assert.ok(
      job.invalidate.some((x) => x.join() === k),
      k,
    );
  assert.deepEqual(planRefetch([{ what: 'samples' }]).invalidate, [['samples'], ['host'], ['device']]);
  // A team's, a membership's or a limit's change is audited: the Teams page reads again.
  assert.deepEqual(planRefetch([{ what: 'audit' }]).invalidate, [['audit'], ['teams']]);
  assert.deepEqual(planRefetch([{ what: 'sheet', host: 'a' }]).invalidate, [['host', 'a'], ['device']]);
});

test("a host's new part replaces its old one in place; a host that is gone goes", () => {
  const old = fleet([dev('a', 0), dev('b', 0), dev('b', 1), dev('c', 0)], 2);
  const b = fleet([dev('b', 1, { state: 'busy' }), dev('b', 0)], 5);
  const patched = patchFleet(old, ['b'], [b]);
  assert.deepEqual(
    patched.devices.map((d) => `${d.name}:${d.state}`),
    ['a:gpu0:free', 'b:gpu0:free', 'b:gpu1:busy', 'c:gpu0:free'],
  );
  assert.equal(patched.queued, 5);
  assert.deepEqual(
    patchFleet(old, ['c'], [fleet([])]).devices.map((d) => d.name),
    ['a:gpu0', 'b:gpu0', 'b:gpu1'],
  );
  assert.deepEqual(
    patchFleet(fleet([dev('b', 0), dev('a', 0)]), [], []).devices.map((d) => d.name),
    ['a:gpu0', 'b:gpu0'],
    'sorted as the server sorts',
  );
});

test('totals, per model, by host; a busy device whose lease is a hold is held', () => {
  const holder = (kind: 'hold' | 'run') => ({ jobId: 'j', kind, submitter: 's', since: '' });
  const ds = [
    dev('a', 0, { state: 'busy', holder: holder('hold') }),
    dev('a', 1, { state: 'busy', holder: holder('run') }),
    dev('b', 0, { state: 'unhealthy', labels: { gpu_model: 'RTX4090' } }),
    dev('b', 1, { labels: { gpu_model: 'RTX4090' } }),
    dev('b', 2, { state: 'reserved', reservedFor: { jobId: 'j2', submitter: 's', gpus: 2, why: 'multi_gpu' }, labels: { gpu_model: 'RTX4090' } }),
    dev('c', 0, { state: 'offline', labels: { gpu_model: 'none' } }),
  ];
  assert.equal(shownState(ds[0]!), 'held');
  assert.equal(shownState(ds[4]!), 'reserved');
  assert.deepEqual(fleetTotals(ds), { all: 6, free: 1, busy: 1, reserved: 1, held: 1, off: 0, unhealthy: 1, offline: 1, removed: 0 });
  assert.deepEqual(perModel(ds), [
    { model: 'RTX4090', total: 3, free: 1, reserved: 1, used: 0, unavailable: 1 },
    { model: 'H100', total: 2, free: 0, reserved: 0, used: 2, unavailable: 0 },
    { model: 'no GPU', total: 1, free: 0, reserved: 0, used: 0, unavailable: 1 },
  ]);
  assert.deepEqual(
    byHost(ds).map((g) => [g.name, g.devices.length]),
    [
      ['a', 2],
      ['b', 3],
      ['c', 1],
    ],
  );
});

test('the dashboard stops what the controller would let it: an admin anything, a client its own', () => {
  const unbound = { kind: 'client', name: 'ana', submitter: null };
  const bound = { kind: 'client', name: 't', submitter: 'bob' };
  const prefix = { kind: 'client', name: 't', submitter: 'team/' };
  const admin = { kind: 'admin', name: 'ops', submitter: null };
  assert.equal(webSubmitter(unbound), 'web:ana');
  assert.equal(webSubmitter(prefix), 'team/web');
  assert.deepEqual(
    [
      mayStop(unbound, 'web:ana'),
      mayStop(unbound, 'alice'),
      mayStop(bound, 'bob'),
      mayStop(bound, 'web:t'),
      mayStop(prefix, 'team/x'),
      mayStop(prefix, 'other'),
    ],
    [true, false, true, false, true, false],
  );
  assert.equal(mayStop(admin, 'anyone'), true);
  assert.equal(stopAs(admin, 'alice'), 'web:ops', 'an admin acts as itself, audited');
  assert.equal(stopAs(prefix, 'team/x'), 'team/x');
});

test('a terminal URL starts a terminal only once, and only after the button armed it', () => {
  const href = terminalHref({ device: 'a:gpu0' });
  assert.equal(href, '/terminal?device=a%3Agpu0');
  assert.equal(takeArmed(href), false, 'loading the URL by itself');
  armTerminal(href);
  assert.equal(takeArmed('/terminal?device=b%3Agpu0'), false, 'another terminal');
  armTerminal(href);
  assert.equal(takeArmed(href), true);
  assert.equal(takeArmed(href), false, 'once');
  assert.equal(terminalHref({ select: 'vram>=40G' }), '/terminal?select=vram%3E%3D40G');
});

test('the browser reads the frame stream as the CLI does, across any cut', () => {
  const bytes = Buffer.concat([
    encodeOutput(1, 1, Buffer.from('\x1b[31mred\x1b[0m\n')),
    encodeEvent({ type: 'notice', message: 'truncated' }),
    encodeOutput(2, 2, Buffer.from('err\n')),
    encodeEvent({ type: 'exit', jobId: 'j', state: 'succeeded', exitCode: 0, reason: null, cause: 'exit' }),
  ]);
  for (const cut of [1, 3, 5, 9, 17, bytes.length - 1]) {
    const reader = new FrameReader();
    const items = [...reader.push(new Uint8Array(bytes.subarray(0, cut))), ...reader.push(new Uint8Array(bytes.subarray(cut)))];
    assert.deepEqual(
      items.map((i) => (i.kind === 'output' ? `${i.stream}:${i.seq}:${Buffer.from(i.data).toString()}` : i.event.type)),
      ['1:1:\x1b[31mred\x1b[0m\n', 'notice', '2:2:err\n', 'exit'],
      `cut at ${cut}`,
    );
  }
});
