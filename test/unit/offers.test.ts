// GET /api/offers' core (server/machines/offers.ts): the query checked, every
// account asked at once, one that fails to answer a warning and not a failure,
// the fitting offers cheapest first across accounts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cloudNames } from '../../core/machine-fit';
import { cheapestOffers, parseOffersQuery } from '../../server/machines/offers';
import type { Offer, Provider } from '../../server/providers/provider';

const shape = (account: string, offerId: string, gpuModel: string, gpuCount: number, pricePerHour: number, spot = false): Offer => ({
  account,
  offerId,
  gpuModel,
  gpuCount,
  vramGiB: 80,
  cpus: 8,
  ramGiB: 64,
  diskGiB: 100,
  cuda: '12.4',
  region: 'eu',
  spot,
  pricePerHour,
  simulated: false,
});

function account(name: string, offers: Offer[] | Error): Provider {
  return {
    account: name,
    prefix: 'x',
    offers: async (q) => {
      if (offers instanceof Error) throw offers;
      return offers.filter((o) => (q.spot === false ? !o.spot : true));
    },
    launch: async () => {},
    describe: async () => [],
    terminate: async () => 'gone',
    list: async () => [],
  };
}

const a = account('runpod/lab-a', [shape('runpod/lab-a', 'h100', 'H100', 1, 3), shape('runpod/lab-a', 'a100s', 'A100-80GB', 2, 1, true)]);
const b = account('runpod/lab-b', [shape('runpod/lab-b', 'a100', 'A100-40GB', 2, 2)]);
const down = account('runpod/lab-c', new Error('401 Unauthorized'));

test('offers across accounts, cheapest first; an account that fails is a warning naming it', async () => {
  const r = await cheapestOffers([a, b, down], parseOffersQuery(new URLSearchParams()));
  assert.deepEqual(
    r.offers.map((o) => o.offerId),
    ['a100', 'h100'],
  );
  assert.equal(r.warnings.length, 1);
  assert.match(r.warnings[0]!, /^runpod\/lab-c: .*401 Unauthorized/);
});

test('spot offers compete only with spot=1; --gpu takes a family and a count; --cloud a provider or an account', async () => {
  const spot = await cheapestOffers([a, b], parseOffersQuery(new URLSearchParams('spot=1')));
  assert.deepEqual(
    spot.offers.map((o) => o.offerId),
    ['a100s', 'a100', 'h100'],
  );
  const a100x2 = await cheapestOffers([a, b], parseOffersQuery(new URLSearchParams('gpu=A100:2')));
  assert.deepEqual(
    a100x2.offers.map((o) => o.offerId),
    ['a100'],
  );
  assert.deepEqual((await cheapestOffers([a, b], parseOffersQuery(new URLSearchParams('gpu=H100:2')))).offers, []);
  const onlyA = await cheapestOffers([a, b], parseOffersQuery(new URLSearchParams('cloud=runpod/lab-a')));
  assert.deepEqual(
    onlyA.offers.map((o) => o.offerId),
    ['h100'],
  );
  assert.ok(cloudNames('runpod', 'runpod/lab-b'));
  assert.ok(!cloudNames('runpo', 'runpod/lab-b'));
  await assert.rejects(cheapestOffers([a], parseOffersQuery(new URLSearchParams('cloud=gcp'))), /no configured account is gcp; the accounts are runpod\/lab-a/);
});

test('every bad value is refused with a sentence naming its key', () => {
  for (const q of ['max-price=-1', 'max-price=0', 'cpus=1e3', 'limit=9999', 'ram=', 'spot=true', 'cuda=12', 'gpu=,', 'cloud=a b', 'x=1']) {
    assert.throws(
      () => parseOffersQuery(new URLSearchParams(q)),
      (e: Error & { code?: string }) => e.code === 'bad_request' && e.message.length > 10,
      q,
    );
  }
  assert.equal(parseOffersQuery(new URLSearchParams()).limit, 20);
});
