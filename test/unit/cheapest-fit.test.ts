// The cheapest-fit pick (core/cheapest-fit.ts): price order, spot only with
// --spot, --max-price, and a failed offer skipped for 10 minutes, then tried again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cheapestFirst, FAILED_OFFER_SKIP_MS, FailedOffers } from '../../core/cheapest-fit';

const o = (offerId: string, pricePerHour: number, spot = false, account = 'local') => ({ account, offerId, pricePerHour, spot });
const ids = (xs: readonly { offerId: string }[]) => xs.map((x) => x.offerId);

test('the cheapest offer comes first; equal prices are ordered by account and offer id alike everywhere', () => {
  const offers = [o('b', 3), o('a', 1.5), o('c', 2.1), o('z', 1.5, false, 'aaa')];
  assert.deepEqual(ids(cheapestFirst(offers, { spot: false })), ['z', 'a', 'c', 'b']);
});

test('spot offers compete only with --spot; --max-price leaves out dearer ones', () => {
  const offers = [o('spot', 0.5, true), o('od', 1), o('dear', 9)];
  assert.deepEqual(ids(cheapestFirst(offers, { spot: false })), ['od', 'dear']);
  assert.deepEqual(ids(cheapestFirst(offers, { spot: true })), ['spot', 'od', 'dear']);
  assert.deepEqual(ids(cheapestFirst(offers, { spot: true, maxPricePerHour: 1 })), ['spot', 'od']);
  assert.deepEqual(ids(cheapestFirst(offers, { spot: false, maxPricePerHour: 0.1 })), []);
});

test('an offer whose launch failed is skipped for 10 minutes, then tried again; another account’s same id is not', () => {
  let now = 1_000_000;
  const failed = new FailedOffers(FAILED_OFFER_SKIP_MS, () => now);
  const offers = [o('cheap', 1), o('next', 2), o('cheap', 1.5, false, 'runpod/x')];
  failed.failed(offers[0]!);
  assert.deepEqual(ids(cheapestFirst(offers, { spot: false }, failed.skipped)), ['cheap', 'next']);
  assert.equal(cheapestFirst(offers, { spot: false }, failed.skipped)[0]!.account, 'runpod/x');
  now += FAILED_OFFER_SKIP_MS - 1;
  assert.equal(failed.skipped(offers[0]!), true);
  now += 1;
  assert.deepEqual(ids(cheapestFirst(offers, { spot: false }, failed.skipped)), ['cheap', 'cheap', 'next']);
});
