import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { encodeEvent, encodeFrame, encodeOutput, FRAME_EVENT, FRAME_STDERR, FRAME_STDOUT, FrameDecoder, splitOutput } from '../../core/frames';

test('frames survive any split of the byte stream', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.constantFrom(FRAME_STDOUT, FRAME_STDERR), fc.uint8Array({ maxLength: 300 })), { maxLength: 20 }),
      fc.array(fc.nat(400), { maxLength: 10 }),
      (frames, cuts) => {
        const bytes = Buffer.concat(frames.map(([t, p]) => encodeFrame(t, p)));
        const got: [number, Buffer][] = [];
        const decoder = new FrameDecoder((t, p) => got.push([t, Buffer.from(p)]));
        let at = 0;
        for (const c of [...cuts].sort((a, b) => a - b)) {
          const to = Math.min(c, bytes.length);
          if (to > at) {
            decoder.push(bytes.subarray(at, to));
            at = to;
          }
        }
        decoder.push(bytes.subarray(at));
        assert.equal(decoder.leftover, 0);
        assert.deepEqual(
          got.map(([t, p]) => [t, [...p]]),
          frames.map(([t, p]) => [t, [...p]]),
        );
      },
    ),
    { numRuns: 300 },
  );
});

test('an event frame carries JSON', () => {
  const got: unknown[] = [];
  new FrameDecoder((t, p) => {
    assert.equal(t, FRAME_EVENT);
    got.push(JSON.parse(p.toString()));
  }).push(encodeEvent({ type: 'exit', jobId: 'j1', state: 'failed', exitCode: 7, reason: null, cause: 'exit' }));
  assert.deepEqual(got, [{ type: 'exit', jobId: 'j1', state: 'failed', exitCode: 7, reason: null, cause: 'exit' }]);
});

test('a cut frame is reported as leftover', () => {
  const d = new FrameDecoder(() => assert.fail('no whole frame'));
  d.push(encodeFrame(FRAME_STDOUT, Buffer.from('hello')).subarray(0, 7));
  assert.equal(d.leftover, 7);
});

test('output frames carry their sequence number and bytes exactly', () => {
  fc.assert(
    fc.property(fc.constantFrom(1 as const, 2 as const), fc.nat(2 ** 32 - 1), fc.uint8Array({ maxLength: 200 }), (stream, seq, data) => {
      const got: [number, number, number[]][] = [];
      new FrameDecoder((t, p) => {
        const o = splitOutput(p);
        got.push([t, o.seq, [...o.data]]);
      }).push(encodeOutput(stream, seq, data));
      assert.deepEqual(got, [[stream === 1 ? FRAME_STDOUT : FRAME_STDERR, seq, [...data]]]);
    }),
  );
});
