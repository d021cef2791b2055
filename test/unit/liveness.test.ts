// The pure parts of judging a host alive: a controller's own pauses, and which
// silent hosts are dead (server/pause-watch.ts, server/reaper.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { heartbeatAckMs, heartbeatMs, switchGraceS } from '../../server/heartbeat-timing';
import { PauseWatch } from '../../server/pause-watch';
import { deadHosts, nextDueMs } from '../../server/reaper';

test('a gap in the event loop longer than the bound is a pause: awake-for counts from its end, whoever looks first', () => {
  let now = 1000;
  const pauses: number[] = [];
  const watch = new PauseWatch(
    2000,
    (gap) => pauses.push(gap),
    () => now,
  );
  now += 250;
  assert.equal(watch.awakeForMs(), Number.POSITIVE_INFINITY, 'never paused');
  now += 1900; // busy, not paused
  assert.equal(watch.awakeForMs(), Number.POSITIVE_INFINITY);
  now += 20_000; // SIGSTOP: the reaper's timer is the first to run after it
  assert.equal(watch.awakeForMs(), 0);
  assert.deepEqual(pauses, [20_000]);
  now += 250;
  assert.equal(watch.awakeForMs(), 250);
  // The watch's own ticks, every 250 ms, between the reaper's looks.
  for (let i = 0; i < 24; i++) {
    now += 250;
    assert.ok(watch.awakeForMs() > 0);
  }
  assert.equal(watch.awakeForMs(), 6250);
  assert.equal(pauses.length, 1);
});

test('the silent hosts that are dead: not heard from, and past their timeout; a host online on no controller here gets the switch grace', () => {
  const T = 6;
  const grace = switchGraceS(T);
  const silent = [
    { name: 'held', status: 'online', silentS: T + 1 },
    { name: 'heard', status: 'online', silentS: T + 1 },
    { name: 'away', status: 'away', silentS: T + 1 },
    { name: 'moving', status: 'online', silentS: T + grace - 1 },
    { name: 'gone', status: 'online', silentS: T + grace + 1 },
  ];
  const dead = deadHosts(silent, T, new Set(['heard']), (h) => h === 'held' || h === 'heard');
  assert.deepEqual(dead, ['held', 'away', 'gone']);
});

test("the switch grace covers a worker's time to leave a frozen controller, at every host timeout", () => {
  for (const T of [1, 2, 3, 6, 15, 60, 3600]) {
    const leaveS = (heartbeatMs(T) + heartbeatAckMs(T)) / 1000;
    assert.ok(T + switchGraceS(T) >= leaveS + 1, `T=${T}: leaves after ${leaveS} s, grace ends at ${T + switchGraceS(T)} s`);
    assert.ok(heartbeatAckMs(T) >= 2000);
  }
});

test('the reaper wakes when the next nearly silent host falls due, not at its next tick', () => {
  const T = 15;
  const grace = switchGraceS(T);
  const held = (h: string) => h !== 'elsewhere';
  const silent = [
    { name: 'due', status: 'away', silentS: T + 0.1 },
    { name: 'soon', status: 'away', silentS: T - 0.4 },
    { name: 'sooner', status: 'online', silentS: T - 0.25 },
    { name: 'heard', status: 'online', silentS: T - 0.1 },
    { name: 'elsewhere', status: 'online', silentS: T - 0.05 },
  ];
  const next = nextDueMs(silent, T, new Set(['heard']), held);
  assert.ok(Math.abs(next! - 250) < 1e-6, `next due in ${next} ms`);
  // One online on another controller is due only after the switch grace.
  assert.ok(Math.abs(nextDueMs([silent[4]!], T, new Set(), held)! - (grace + 0.05) * 1000) < 1e-6);
  assert.equal(nextDueMs([silent[0]!], T, new Set(), held), null, 'a host already due is not waited for');
});
