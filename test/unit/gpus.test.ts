import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { dockerGpusValue, normalizeGpuSpec } from '../../core/gpus';

const U1 = 'GPU-6a1b2c3d-0000-4000-8000-000000000001';
const U2 = 'GPU-6a1b2c3d-0000-4000-8000-000000000002';

describe('normalizeGpuSpec', () => {
  test('accepted forms', () => {
    const rows: [string, string][] = [
      ['all', 'all'],
      ['1', '1'],
      ['8', '8'],
      ['64', '64'],
      ['0,1', 'device=0,1'],
      ['3,0', 'device=3,0'],
      [U1, `device=${U1}`],
      [`${U1},${U2}`, `device=${U1},${U2}`],
      ['device=0', 'device=0'],
      ['device=0,1', 'device=0,1'],
      [`device=${U1}`, `device=${U1}`],
      [`device=${U1},${U2}`, `device=${U1},${U2}`],
    ];
    for (const [input, arg] of rows) assert.deepEqual(normalizeGpuSpec(input), { ok: true, arg }, input);
  });

  test('a count of 0 or over 64 is refused', () => {
    const zero = normalizeGpuSpec('0');
    assert.equal(zero.ok, false);
    assert.match(!zero.ok ? zero.reason : '', /^a count of 0 /);
    const many = normalizeGpuSpec('65');
    assert.equal(many.ok, false);
    assert.match(!many.ok ? many.reason : '', /a count of 65 .*1 to 64/);
  });

  test('everything else is refused with a reason', () => {
    const bad = [
      '',
      ' ',
      ' all',
      'all ',
      '0, 1',
      '"0,1"',
      "'0'",
      '0;1',
      '$GPU',
      '0|1',
      'a b',
      '0\n1',
      'device=',
      'device=0,',
      ',0',
      '0,,1',
      '0,0',
      'device=1,1',
      `${U1},${U1}`,
      `${U1},${U1.toUpperCase()}`,
      'GPU-123',
      'GPU-',
      'gpu0',
      'device=all',
      'all,0',
      'none',
      '-1',
      '1.5',
      'device=GPU-zz',
    ];
    for (const input of bad) {
      const r = normalizeGpuSpec(input);
      assert.equal(r.ok, false, JSON.stringify(input));
      if (!r.ok) {
        assert.ok(r.reason.length > 10, JSON.stringify(input));
        assert.doesNotMatch(r.reason, /\n/, JSON.stringify(input));
      }
    }
  });

  test('reasons say what to do', () => {
    const twice = normalizeGpuSpec('0,0');
    assert.match(!twice.ok ? twice.reason : '', /listed twice.*list each GPU once/);
    const chars = normalizeGpuSpec('0;rm -rf /');
    assert.match(!chars.ok ? chars.reason : '', /characters a GPU list cannot contain/);
    const empty = normalizeGpuSpec('');
    assert.match(!empty.ok ? empty.reason : '', /use all, a count/);
  });
});

describe('dockerGpusValue', () => {
  test("a device list with a comma is quoted for docker's CSV parsing; single values are not", () => {
    assert.equal(dockerGpusValue('all'), 'all');
    assert.equal(dockerGpusValue('2'), '2');
    assert.equal(dockerGpusValue('device=0'), 'device=0');
    assert.equal(dockerGpusValue(`device=${U1}`), `device=${U1}`);
    assert.equal(dockerGpusValue('device=0,1'), '"device=0,1"');
    assert.equal(dockerGpusValue(`device=${U1},${U2}`), `"device=${U1},${U2}"`);
  });

  test('normalised then quoted', () => {
    const r = normalizeGpuSpec('0,1');
    assert.ok(r.ok);
    assert.equal(dockerGpusValue(r.arg), '"device=0,1"');
  });
});
