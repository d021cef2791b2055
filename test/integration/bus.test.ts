// The bus between controllers (server/bus.ts) on a real Postgres: two of them
// on one database hear each other and not themselves, a payload too big for
// NOTIFY is shortened or refused, and a listen connection that is cut comes
// back by itself (saying so, so its controller can catch up).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Bus, type BusMessage, encode, MAX_PAYLOAD_BYTES } from '../../server/bus';
import { freshDatabase } from '../helpers/db';
import { until } from '../helpers/until';

let url = '';
let drop: () => Promise<void>;
/** Every bus a test started: stopped after it, passed or failed (an open LISTEN connection would keep the file running). */
const buses: Bus[] = [];
const bus = (log: (m: string) => void) => {
  const b = new Bus({ url, log });
  buses.push(b);
  return b;
};
let admin: Awaited<ReturnType<typeof freshDatabase>>['database'];
before(async () => {
  const db = await freshDatabase();
  url = db.url;
  drop = db.drop;
  admin = db.database;
});
after(async () => {
  for (const b of buses) await b.stop();
  await drop();
});

test("two controllers' buses hear each other, not themselves, and a cut listen connection comes back", { timeout: 30_000 }, async () => {
  const log = () => {};
  const a = bus(log);
  const b = bus(log);
  const got = { a: [] as BusMessage[], b: [] as BusMessage[] };
  let bListens = 0;
  await a.start(
    (m) => got.a.push(m),
    () => {},
  );
  await b.start(
    (m) => got.b.push(m),
    () => {
      bListens++;
    },
  );
  const exit: BusMessage = {
    t: 'job',
    jobId: 'j0000000001',
    event: { type: 'exit', jobId: 'j0000000001', state: 'succeeded', exitCode: 0, reason: null, cause: 'exit' },
  };
  a.publish(exit);
  a.publish({ t: 'out', spans: [{ jobId: 'j0000000001', from: 40, to: 42 }] });
  await until(() => (got.b.length === 2 ? true : undefined), 'b to hear both messages');
  assert.deepEqual(got.b, [exit, { t: 'out', spans: [{ jobId: 'j0000000001', from: 40, to: 42 }] }]);
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(got.a, [], 'a does not hear its own messages');

  // Cut b's listen connection: it comes back by itself and says so.
  const before = bListens;
  await admin.client`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'rc-bus' and query ilike 'listen%' and pid <> pg_backend_pid()`;
  await until(() => (bListens > before ? true : undefined), 'b to listen again', 15_000);
  got.b.length = 0;
  a.publish({ t: 'poke' });
  await until(() => (got.b.length ? true : undefined), 'b to hear a message after the cut', 15_000);
  assert.deepEqual(got.b, [{ t: 'poke' }]);
});

test('a payload NOTIFY cannot carry: a long reason is shortened, anything else too big is not sent', () => {
  const event = { type: 'exit' as const, jobId: 'j1', state: 'killed' as const, exitCode: null, reason: 'x'.repeat(20_000), cause: 'killed' as const };
  const text = encode({ from: 'me', m: { t: 'job', jobId: 'j0000000001', event } });
  assert.ok(text !== null && Buffer.byteLength(text) <= MAX_PAYLOAD_BYTES);
  assert.match(JSON.parse(text).m.event.reason, /^x{1000}…$/);
  assert.equal(encode({ from: 'me', m: { t: 'order', host: 'h', event: 'tty:input', payload: 'y'.repeat(9000) } }), null);
});

test('identical messages published in one turn all arrive, in order: NOTIFY folds equal payloads of one transaction into one', {
  timeout: 30_000,
}, async () => {
  const a = bus(() => {});
  const b = bus(() => {});
  const got: BusMessage[] = [];
  await a.start(
    () => {},
    () => {},
  );
  await b.start(
    (m) => got.push(m),
    () => {},
  );
  // Two keystrokes that are the same (`))`), and two pokes: one turn of the event loop, so one statement.
  const key: BusMessage = { t: 'poke' };
  for (let i = 0; i < 4; i++) a.publish(key);
  a.publish({ t: 'cut', tokenId: 7 });
  a.publish({ t: 'cut', tokenId: 7 });
  await until(() => (got.length >= 6 ? true : undefined), 'b to hear all six', 5000);
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(got, [key, key, key, key, { t: 'cut', tokenId: 7 }, { t: 'cut', tokenId: 7 }]);
});
