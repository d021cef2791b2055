// Token guesses limited per client address (server/auth-limit.ts): the
// count, the window, other addresses, IPv6 by /64, and memory that a flood
// of addresses cannot grow.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AuthLimit, clientKey, RateLimited } from '../../server/auth-limit';

function limitAt(failures: number, windowMs: number, maxClients?: number) {
  const clock = { now: 1_000_000 };
  return { clock, limit: new AuthLimit({ failures, windowMs, maxClients }, () => clock.now) };
}

test('after N refused tokens within the window an address is refused until the oldest is a window old; others are not', () => {
  const { clock, limit } = limitAt(3, 60_000);
  for (let i = 0; i < 3; i++) {
    limit.check('10.0.0.1');
    limit.failed('10.0.0.1');
    clock.now += 1000;
  }
  // Three failures at 0, 1 and 2 s: the first is a window old at 60 s, 57 s from now (3 s).
  assert.equal(limit.retryAfterMs('10.0.0.1'), 57_000);
  assert.throws(
    () => limit.check('10.0.0.1'),
    (err: unknown) => err instanceof RateLimited && err.code === 'rate_limited' && err.status === 429 && err.retryAfterS === 57,
  );
  assert.throws(() => limit.check('10.0.0.1'), /too many refused tokens from 10\.0\.0\.1: no token from it is checked for 57 s/);
  assert.equal(limit.retryAfterMs('10.0.0.2'), 0, 'another address is not limited');
  limit.check('10.0.0.2');
  clock.now += 56_999;
  assert.ok(limit.retryAfterMs('10.0.0.1') > 0, 'still refused 1 ms before');
  clock.now += 1;
  assert.equal(limit.retryAfterMs('10.0.0.1'), 0, 'free once the first failure is a window old');
  // One more failure: three within the window again (1 s, 2 s, now), refused until the one at 1 s ages out.
  limit.failed('10.0.0.1');
  assert.equal(limit.retryAfterMs('10.0.0.1'), 1000);
});

test('failures spread out never reach the limit: the window slides', () => {
  const { clock, limit } = limitAt(3, 60_000);
  for (let i = 0; i < 100; i++) {
    limit.check('10.0.0.1');
    limit.failed('10.0.0.1');
    clock.now += 30_001;
  }
  assert.equal(limit.retryAfterMs('10.0.0.1'), 0);
});

test('0 failures: no limit', () => {
  const { limit } = limitAt(0, 60_000);
  for (let i = 0; i < 1000; i++) limit.failed('10.0.0.1');
  limit.check('10.0.0.1');
  assert.equal(limit.size, 0, 'nothing is kept');
});

test('IPv4 as mapped into IPv6 is the same client; IPv6 counts by its /64', () => {
  assert.equal(clientKey('::ffff:192.0.2.7'), '192.0.2.7');
  assert.equal(clientKey('192.0.2.7'), '192.0.2.7');
  assert.equal(clientKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  assert.equal(clientKey('2001:0db8:0001:0002:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
  assert.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(clientKey('::1'), '0:0:0:0::/64');
  assert.equal(clientKey(undefined), 'unknown');
  const { limit } = limitAt(2, 60_000);
  limit.failed('2001:db8:1:2::1');
  limit.failed('2001:db8:1:2:ffff:ffff:ffff:ffff');
  assert.ok(limit.retryAfterMs('2001:db8:1:2::99') > 0, 'the next address in the /64 is refused too');
  assert.equal(limit.retryAfterMs('2001:db8:1:3::1'), 0, 'another /64 is not');
  limit.failed('::ffff:192.0.2.7');
  limit.failed('192.0.2.7');
  assert.ok(limit.retryAfterMs('192.0.2.7') > 0);
});

test('a flood of addresses keeps at most maxClients in memory; the ones that failed longest ago go first', () => {
  const { clock, limit } = limitAt(2, 60_000, 100);
  limit.failed('10.9.9.9');
  limit.failed('10.9.9.9');
  for (let i = 0; i < 10_000; i++) {
    limit.failed(`10.0.${i >> 8}.${i & 255}`);
    clock.now += 1;
  }
  assert.ok(limit.size <= 100, `${limit.size} addresses kept`);
  // The flood pushed the oldest out: 10.9.9.9 is forgotten (bounded memory wins over a long memory).
  assert.equal(limit.retryAfterMs('10.9.9.9'), 0);
  // Recent ones are still counted.
  limit.failed('10.0.39.15');
  assert.ok(limit.retryAfterMs('10.0.39.15') > 0);
  // Once their window has passed, they are forgotten as new ones come.
  clock.now += 60_001;
  limit.failed('10.1.1.1');
  assert.equal(limit.size, 1);
});
