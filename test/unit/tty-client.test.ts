// The terminal client's state machine (protocol/tty-client.ts), shared by
// rc run --tty and the dashboard's terminal: what it sends on (re)connect, how
// it counts the bytes a re-attach resumes after, that acks follow writes, that
// the end comes once and nothing is done after it, and what happens to keys
// typed before the terminal started.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { type TtyClientAction, TtyClient, type TtyClientOptions } from '../../protocol/tty-client';
import type { TtyExit, TtyStarted } from '../../protocol/wire';

const JOB = 'j0123456789';
const size = { cols: 100, rows: 30 };
const client = (o: Partial<TtyClientOptions> = {}) => new TtyClient({ open: { argv: ['sh'], submitter: 'tester' }, size: () => size, ...o });
const started = (offset = 0, jobId = JOB): TtyStarted => ({ jobId, host: 'alpha', devices: ['alpha:0'], offset });
const exit: TtyExit = { jobId: JOB, state: 'succeeded', exitCode: 0, reason: null, cause: null };
const bytes = (n: number) => new Uint8Array(n).fill(0x61);
const types = (actions: TtyClientAction[]) => actions.map((a) => a.type);
const opens = (actions: TtyClientAction[]) => actions.flatMap((a) => (a.type === 'open' ? [a.message] : []));

test('the first connect opens a new terminal with the submit fields and the size now', () => {
  let now = size;
  const c = client({ size: () => now });
  assert.equal(c.phase, 'connecting');
  now = { cols: 132, rows: 43 };
  assert.deepEqual(c.connected(), [{ type: 'open', message: { argv: ['sh'], submitter: 'tester', cols: 132, rows: 43 }, reattach: false }]);
  assert.equal(c.phase, 'opening');
});

test('given a job id, the first connect re-attaches from byte 0 and never opens a new terminal', () => {
  const c = client({ jobId: JOB });
  assert.deepEqual(opens(c.connected()), [{ jobId: JOB, after: 0, ...size }]);
  const q = c.queued({ jobId: JOB, position: null });
  assert.deepEqual(q, [{ type: 'queued', jobId: JOB, position: null, first: false }], 'a re-attach is not the first news of the job');
});

test('a reconnect re-attaches after the bytes received: started.offset plus the output since', () => {
  const c = client();
  c.connected();
  assert.deepEqual(c.queued({ jobId: JOB, position: 2 }), [{ type: 'queued', jobId: JOB, position: 2, first: true }]);
  assert.deepEqual(c.started(started(0)), [{ type: 'started', jobId: JOB, host: 'alpha', devices: ['alpha:0'], offset: 0, first: true }]);
  c.output(bytes(5));
  c.output(bytes(7).buffer); // a browser's ArrayBuffer
  assert.equal(c.received, 12);
  assert.deepEqual(c.disconnected(), [{ type: 'lost', jobId: JOB }]);
  assert.deepEqual(c.connected(), [{ type: 'open', message: { jobId: JOB, after: 12, ...size }, reattach: true }]);
  assert.equal(c.phase, 'opening');
  // The controller replays from the oldest byte it still keeps: that is where counting goes on.
  assert.deepEqual(c.started(started(4)), [{ type: 'started', jobId: JOB, host: 'alpha', devices: ['alpha:0'], offset: 4, first: false }]);
  c.output(bytes(3));
  assert.equal(c.received, 7);
  c.disconnected();
  assert.deepEqual(opens(c.connected()), [{ jobId: JOB, after: 7, ...size }]);
});

test('output before started is written and counted; started then sets the count to its offset', () => {
  const c = client({ jobId: JOB });
  c.connected();
  const w = c.output(bytes(4));
  assert.deepEqual(types(w), ['write']);
  assert.equal(c.received, 4);
  c.started(started(100));
  assert.equal(c.received, 100);
  c.output(bytes(1));
  assert.equal(c.received, 101);
});

test('a write hands over the very bytes; written() acks exactly what was written', () => {
  const c = client();
  c.connected();
  c.started(started());
  const chunk = bytes(9);
  const [w] = c.output(chunk);
  assert.ok(w?.type === 'write' && w.bytes === chunk, 'no copy of a Uint8Array (a Buffer in Node)');
  assert.deepEqual(c.written(9), [{ type: 'ack', bytes: 9 }]);
  const ab = new ArrayBuffer(3);
  const [w2] = c.output(ab);
  assert.ok(w2?.type === 'write' && w2.bytes instanceof Uint8Array && w2.bytes.buffer === ab);
});

test('acks add up to the output written, whatever the chunks', () => {
  fc.assert(
    fc.property(fc.array(fc.nat({ max: 70_000 }), { maxLength: 30 }), fc.nat({ max: 1000 }), (sizes, offset) => {
      const c = client();
      c.connected();
      c.started(started(offset));
      let acked = 0;
      for (const n of sizes) {
        for (const a of c.output(bytes(n))) {
          assert.equal(a.type, 'write');
          if (a.type === 'write') for (const b of c.written(a.bytes.length)) if (b.type === 'ack') acked += b.bytes;
        }
      }
      const total = sizes.reduce((x, y) => x + y, 0);
      assert.equal(acked, total);
      assert.equal(c.received, offset + total);
    }),
  );
});

test('the exit comes once; after it nothing is written, sent or re-attached', () => {
  const c = client();
  c.connected();
  c.started(started());
  assert.deepEqual(c.exit(exit), [{ type: 'exit', exit }]);
  assert.equal(c.phase, 'ended');
  assert.deepEqual(c.exit(exit), []);
  assert.deepEqual(c.output(bytes(3)), []);
  assert.deepEqual(c.input('x'), []);
  assert.deepEqual(c.resize(size), []);
  assert.deepEqual(c.disconnected(), [], 'closing the socket after the exit is not a lost connection');
  assert.deepEqual(c.connected(), []);
  assert.deepEqual(c.error({ code: 'internal', message: 'x' }), []);
});

test('detached ends without a re-attach; another error is a refusal that does not end', () => {
  const c = client();
  c.connected();
  c.started(started());
  assert.deepEqual(c.error({ code: 'not_found', message: 'no such job' }), [{ type: 'refused', code: 'not_found', message: 'no such job' }]);
  assert.equal(c.ended, false);
  assert.deepEqual(c.error({ code: 'detached', message: `the terminal ${JOB} was opened elsewhere` }), [
    { type: 'detached', message: `the terminal ${JOB} was opened elsewhere` },
  ]);
  assert.equal(c.phase, 'ended');
  assert.deepEqual(c.disconnected(), []);
  assert.deepEqual(c.connected(), [], 'no open after a detach');
  assert.deepEqual(c.exit(exit), []);
});

test('keys before started are dropped (the controller drops them for a queued job); after, sent as they are', () => {
  const c = client();
  c.connected();
  assert.deepEqual(c.input('early'), []);
  c.queued({ jobId: JOB, position: 0 });
  assert.deepEqual(c.input('still queued'), []);
  c.started(started());
  const bin = Uint8Array.of(0xff, 0x03);
  assert.deepEqual(c.input('ls\r'), [{ type: 'input', data: 'ls\r' }]);
  assert.deepEqual(c.input(bin), [{ type: 'input', data: bin }]);
  c.disconnected();
  assert.deepEqual(types(c.input('x')), ['input'], 'a started terminal keeps its keys over a reconnect (socket.io buffers them)');
});

test('resizes are sent while queued too: the terminal starts with the last size heard', () => {
  const c = client();
  c.connected();
  c.queued({ jobId: JOB, position: 1 });
  assert.deepEqual(c.resize({ cols: 50, rows: 10 }), [{ type: 'resize', size: { cols: 50, rows: 10 } }]);
});

test('a connection lost before the job id came cannot be re-attached: stranded, then nothing', () => {
  const c = client();
  c.connected();
  assert.deepEqual(c.disconnected(), [{ type: 'lost', jobId: null }]);
  assert.deepEqual(c.connected(), [{ type: 'stranded' }]);
  assert.equal(c.phase, 'ended');
  assert.deepEqual(c.connected(), []);
});

test('a lost connection after queued re-attaches to the queued job; queued again is not the first news', () => {
  const c = client();
  c.connected();
  c.queued({ jobId: JOB, position: 3 });
  c.disconnected();
  assert.deepEqual(opens(c.connected()), [{ jobId: JOB, after: 0, ...size }]);
  assert.deepEqual(c.queued({ jobId: JOB, position: null }), [{ type: 'queued', jobId: JOB, position: null, first: false }]);
  assert.equal(c.everStarted, false);
});

test('a failed connection attempt says whether a connection ever worked', () => {
  const c = client();
  assert.deepEqual(c.connectFailed('xhr poll error'), [{ type: 'unreachable', message: 'xhr poll error', everConnected: false }]);
  c.connected();
  c.disconnected();
  assert.deepEqual(c.connectFailed('timeout'), [{ type: 'unreachable', message: 'timeout', everConnected: true }]);
});

test('whatever the events, at most one end, and every open after the first is a re-attach after `received`', () => {
  type Ev =
    | { t: 'connect' }
    | { t: 'disconnect' }
    | { t: 'queued' }
    | { t: 'started'; offset: number }
    | { t: 'output'; n: number }
    | { t: 'exit' }
    | { t: 'error'; code: string };
  const ev: fc.Arbitrary<Ev> = fc.oneof(
    fc.constant({ t: 'connect' as const }),
    fc.constant({ t: 'disconnect' as const }),
    fc.constant({ t: 'queued' as const }),
    fc.nat({ max: 500 }).map((offset) => ({ t: 'started' as const, offset })),
    fc.nat({ max: 500 }).map((n) => ({ t: 'output' as const, n })),
    fc.constant({ t: 'exit' as const }),
    fc.constantFrom('detached', 'not_found', 'internal').map((code) => ({ t: 'error' as const, code })),
  );
  fc.assert(
    fc.property(fc.array(ev, { maxLength: 40 }), fc.boolean(), (events, attach) => {
      const c = client(attach ? { jobId: JOB } : {});
      let ends = 0;
      let newOpens = 0;
      for (const e of events) {
        const before = c.received;
        const out =
          e.t === 'connect'
            ? c.connected()
            : e.t === 'disconnect'
              ? c.disconnected()
              : e.t === 'queued'
                ? c.queued({ jobId: JOB, position: 0 })
                : e.t === 'started'
                  ? c.started(started(e.offset))
                  : e.t === 'output'
                    ? c.output(bytes(e.n))
                    : e.t === 'exit'
                      ? c.exit(exit)
                      : c.error({ code: e.code, message: 'm' });
        for (const a of out) {
          if (a.type === 'exit' || a.type === 'detached' || a.type === 'stranded') ends++;
          if (a.type === 'open' && !a.reattach) newOpens++;
          if (a.type === 'open' && a.reattach) assert.deepEqual(a.message, { jobId: JOB, after: before, ...size });
        }
        if (ends > 0) assert.equal(c.phase, 'ended');
      }
      assert.ok(ends <= 1, 'one end at most');
      assert.ok(newOpens <= (attach ? 0 : 1), 'one new terminal at most, none on a re-attach');
    }),
  );
});
