// rc run --gpu: the grammar (core/gpu-choices.ts), and the choices through
// the scheduler's decision, the preemption rule and the queue's reasons.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { choiceTerms, formatGpuChoices, parseGpuChoices } from '../../core/gpu-choices';
import { hostOffText, hostsOff } from '../../core/hosts-off';
import { type ChoiceFree, noWaitReason } from '../../core/no-wait';
import { matchTerms } from '../../core/selector';
import { pickVictims } from '../../core/preempt';
import { decide, type DeviceView, mayReserve } from '../../core/schedule';
import { TermsCache } from '../../core/terms-cache';
import { type DeviceState, type FleetDevice, waitReasons } from '../../core/wait-reason';
import { job } from '../helpers/schedule';

test('choices parse into canonical models and counts, in order; every spelling of a model is one', () => {
  const p = parseGpuChoices('A100:2,H100');
  assert.deepEqual(p, {
    ok: true,
    choices: [
      { model: 'A100', count: 2 },
      { model: 'H100', count: 1 },
    ],
  });
  for (const spelling of ['5090', 'RTX5090', 'RTX 5090', 'rtx5090', 'NVIDIA GeForce RTX 5090']) {
    assert.deepEqual(parseGpuChoices(`${spelling}:3`), { ok: true, choices: [{ model: 'RTX5090', count: 3 }] }, spelling);
  }
  assert.deepEqual(parseGpuChoices(' H100 : 8 , l4 '), {
    ok: true,
    choices: [
      { model: 'H100', count: 8 },
      { model: 'L4', count: 1 },
    ],
  });
  // A model rc does not know is the fleet's to judge (the controller checks it): it parses, compacted.
  assert.deepEqual(parseGpuChoices('MI300X:2'), { ok: true, choices: [{ model: 'MI300X', count: 2 }] });
  assert.equal(
    formatGpuChoices([
      { model: 'A100', count: 2 },
      { model: 'H100', count: 1 },
    ]),
    'A100:2,H100',
  );
});

test('bad choices are refused with a sentence that says what to write', () => {
  const cases: [string, RegExp][] = [
    ['', /needs at least one choice/],
    ['   ', /needs at least one choice/],
    ['A100,,H100', /choice 2 is empty/],
    ['A100,', /choice 2 is empty/],
    [',A100', /choice 1 is empty/],
    ['A100:0', /count must be 1-8 GPUs on one host, not "0"/],
    ['A100:99', /count must be 1-8 GPUs on one host, not "99"/],
    ['A100:-1', /count must be 1-8/],
    ['A100:', /count must be 1-8/],
    ['A100:two', /count must be 1-8/],
    [':2', /has no model/],
    ['A100,a100:2', /lists A100 twice/],
    ['4090,RTX 4090', /lists RTX4090 twice/],
    ["H100'", /is not a GPU model name/],
    ['gpu_model=H100', /is not a GPU model name/],
    ['H\x1b[31m100', /is not a GPU model name/],
    [`${'X'.repeat(65)}`, /is not a GPU model name/],
    ['A,B,C,D,E,F,G,H,I', /9 choices; at most 8/],
  ];
  for (const [text, message] of cases) {
    const p = parseGpuChoices(text);
    assert.equal(p.ok, false, text);
    if (!p.ok) assert.match(p.message, message, text);
  }
});

const dev = (hostName: string, index: number, model: string, free = true): DeviceView => ({
  id: hostName.charCodeAt(0) * 100 + index,
  name: `${hostName}:gpu${index}`,
  hostName,
  index,
  labels: { gpu_model: model, vram: String(80 * 2 ** 30) },
  free,
});

const cache = new TermsCache();
/** A queued job with --gpu `text` (and --select `selector`). */
const gpuJob = (id: string, text: string, selector = '', over: Parameters<typeof job>[1] = {}) => {
  const p = parseGpuChoices(text);
  assert.ok(p.ok);
  const choices = cache.choices(selector, p.choices)!;
  return job(id, { terms: choices[0]!.terms, gpus: choices[0]!.gpus, choices, ...over });
};

test('the first choice that can start now wins; else the next; the count is the choice’s', () => {
  const fleet = [dev('a', 0, 'A100'), dev('a', 1, 'A100'), dev('h', 0, 'H100')];
  const both = decide([gpuJob('j1', 'A100:2,H100')], fleet);
  assert.deepEqual(
    both.map((a) => a.devices.map((d) => d.name)),
    [['a:gpu0', 'a:gpu1']],
  );
  // One A100 busy: A100:2 cannot start, H100 can.
  const oneBusy = decide([gpuJob('j1', 'A100:2,H100')], [dev('a', 0, 'A100'), dev('a', 1, 'A100', false), dev('h', 0, 'H100')]);
  assert.deepEqual(
    oneBusy.map((a) => a.devices.map((d) => d.name)),
    [['h:gpu0']],
  );
  // The order of the choices is the order of preference, whatever the fleet's order.
  const pref = decide([gpuJob('j1', 'H100,A100')], fleet);
  assert.deepEqual(
    pref.map((a) => a.devices.map((d) => d.name)),
    [['h:gpu0']],
  );
  // Nothing of either free: nothing starts (it waits for whichever frees first).
  assert.deepEqual(decide([gpuJob('j1', 'A100:2,H100')], [dev('a', 0, 'A100', false), dev('a', 1, 'A100'), dev('h', 0, 'H100', false)]), []);
});

test('whichever choice frees first starts it: each later pass tries them all again', () => {
  const queued = [gpuJob('j1', 'A100:2,H100')];
  // The H100 frees first.
  assert.deepEqual(
    decide(queued, [dev('a', 0, 'A100', false), dev('a', 1, 'A100'), dev('h', 0, 'H100')]).map((a) => a.devices[0]!.name),
    ['h:gpu0'],
  );
  // The A100s free first.
  assert.deepEqual(
    decide(queued, [dev('a', 0, 'A100'), dev('a', 1, 'A100'), dev('h', 0, 'H100', false)]).map((a) => a.devices.length),
    [2],
  );
});

test('--select holds for every choice', () => {
  const fleet = [{ ...dev('a', 0, 'A100'), labels: { gpu_model: 'A100', vram: String(40 * 2 ** 30) } }, dev('h', 0, 'H100')];
  assert.deepEqual(
    decide([gpuJob('j1', 'A100,H100', 'vram>=80G')], fleet).map((a) => a.devices[0]!.name),
    ['h:gpu0'],
  );
  assert.deepEqual(decide([gpuJob('j1', 'A100', 'vram>=80G')], fleet), []);
});

test('choices share the queue: a job ahead takes its device first, and the one behind takes its next choice', () => {
  const fleet = [dev('a', 0, 'A100'), dev('h', 0, 'H100')];
  const plan = decide([gpuJob('j1', 'H100'), gpuJob('j2', 'H100,A100')], fleet);
  assert.deepEqual(
    plan.map((a) => [a.jobId, a.devices[0]!.name]),
    [
      ['j1', 'h:gpu0'],
      ['j2', 'a:gpu0'],
    ],
  );
  // Every device is given once, whatever the mix of choices.
  const many = decide(
    Array.from({ length: 6 }, (_, i) => gpuJob(`j${i + 1}`, i % 2 ? 'A100,H100' : 'H100:2,A100')),
    [dev('a', 0, 'A100'), dev('a', 1, 'A100'), dev('h', 0, 'H100'), dev('h', 1, 'H100')],
  );
  const given = many.flatMap((a) => a.devices.map((d) => d.id));
  assert.equal(new Set(given).size, given.length);
  assert.equal(given.length, 4);
});

test('a multi-GPU job reserves only when every choice wants more than one; then for its first choice with a host big enough', () => {
  assert.equal(mayReserve(gpuJob('j1', 'A100:2,H100', '', { waitedS: 99 }), 30), false);
  assert.equal(mayReserve(gpuJob('j1', 'A100:2,H100:2', '', { waitedS: 99 }), 30), true);
  assert.equal(mayReserve(gpuJob('j1', 'A100:2,H100:2', '', { waitedS: 1 }), 30), false);
  // j1 waits for 2 H100 (no host has 2 A100): the free H100 is held back from j2.
  const fleet = [dev('a', 0, 'A100', false), dev('h', 0, 'H100'), dev('h', 1, 'H100', false)];
  const plan = decide([gpuJob('j1', 'A100:2,H100:2', '', { waitedS: 99 }), gpuJob('j2', 'H100')], fleet);
  assert.deepEqual(plan, []);
  const early = decide([gpuJob('j1', 'A100:2,H100:2', '', { waitedS: 1 }), gpuJob('j2', 'H100')], fleet);
  assert.deepEqual(
    early.map((a) => a.jobId),
    ['j2'],
  );
});

test('preemption frees its first choice that preemption can make room for, and none while any choice has room', () => {
  const fleet = [dev('a', 0, 'A100', false), dev('h', 0, 'H100', false)];
  const running = [
    { jobId: 'pa', priority: 0, startedAt: 1, hostName: 'a', deviceIds: [fleet[0]!.id] },
    { jobId: 'ph', priority: 0, startedAt: 2, hostName: 'h', deviceIds: [fleet[1]!.id] },
  ];
  // ph started last, but the job prefers A100: the A100's holder goes.
  assert.deepEqual(pickVictims(gpuJob('j1', 'A100,H100'), fleet, running)?.victims, ['pa']);
  assert.deepEqual(pickVictims(gpuJob('j1', 'H100,A100'), fleet, running)?.victims, ['ph']);
  // Its first choice is held by a job that is not preemptible: the second's holder goes.
  assert.deepEqual(pickVictims(gpuJob('j1', 'A100,H100'), fleet, running.slice(1))?.victims, ['ph']);
  // Room for its second choice: nobody is stopped.
  assert.equal(pickVictims(gpuJob('j1', 'A100,H100'), [fleet[0]!, { ...fleet[1]!, free: true }], running.slice(0, 1)), null);
});

const fdev = (hostName: string, index: number, model: string, state: DeviceState): FleetDevice => {
  const { free: _, ...d } = dev(hostName, index, model);
  return { ...d, state };
};

test('the queue says why for each choice, and which choice it starts on', () => {
  const fleet = [fdev('a', 0, 'A100', 'busy'), fdev('a', 1, 'A100', 'free'), fdev('h', 0, 'H100', 'offline')];
  const why = waitReasons([gpuJob('j1', 'A100:2,H100')], fleet, 30).get('j1')!;
  assert.equal(why.matching, 3);
  assert.equal(why.busy, 1);
  assert.equal(why.offline, 1);
  assert.equal(
    why.text,
    '--gpu A100:2: 1 of 2 matching devices is free, not 2 on one host; 1 is busy. --gpu H100: its one matching device, h:gpu0, is offline',
  );
  const starts = waitReasons([gpuJob('j1', 'A100:2,A6000')], [...fleet, fdev('w', 0, 'A6000', 'free')], 30).get('j1')!;
  assert.equal(starts.text, '--gpu A6000: next in line: a matching device is free');
});

test('a choice names a family (gpu_family: any of its models) or an exact model of a larger family (gpu_model: only it)', () => {
  const term = (name: string) => {
    const p = parseGpuChoices(name);
    assert.ok(p.ok, name);
    return choiceTerms([], p.choices[0]!)[0]!.text;
  };
  assert.deepEqual(['A100', 'a100', 'A100-80GB', 'A100 80GB', 'A100-40GB', 'H100', '4090', 'MI300X'].map(term), [
    'gpu_family=A100',
    'gpu_family=A100',
    'gpu_model=A100-80GB',
    'gpu_model=A100-80GB',
    'gpu_model=A100-40GB',
    'gpu_family=H100',
    'gpu_family=RTX4090',
    'gpu_family=MI300X',
  ]);
  const a40 = { gpu_model: 'A100-40GB', gpu_family: 'A100' };
  const a80 = { gpu_model: 'A100-80GB', gpu_family: 'A100' };
  const matches = (name: string) => [a40, a80].map((l) => matchTerms(choiceTerms([], { model: name }), l));
  assert.deepEqual(matches('A100'), [true, true]);
  assert.deepEqual(matches('A100-80GB'), [false, true], 'a 40 GB card is never taken for an 80 GB one');
  assert.deepEqual(matches('A100-40GB'), [true, false]);
});

test('--no-wait names the busy choices, and counts the free devices that match none', () => {
  const choice = (label: string, name: string, gpus: number, free: number, freeOnOneHost = free): ChoiceFree => ({ label, name, gpus, free, freeOnOneHost });
  assert.equal(
    noWaitReason({ deviceName: null, selector: '' }, [choice('A100', 'A100', 1, 0), choice('H100', 'H100', 1, 0)], 3),
    '--gpu A100,H100: every A100 and H100 device is busy (3 other devices are free but match no choice); the job could not be queued (--no-wait)',
  );
  assert.equal(
    noWaitReason({ deviceName: null, selector: 'rack=r1' }, [choice('A100:2', 'A100', 2, 1), choice('H100', 'H100', 1, 0)], 1),
    '--gpu A100:2,H100: every H100 device matching rack=r1 is busy, and no host has 2 free A100 devices matching rack=r1 (1 other device is free but matches no choice); the job could not be queued (--no-wait)',
  );
  // Without --gpu, as before.
  assert.equal(noWaitReason({ deviceName: 'gpubox:gpu1', selector: '' }, null), 'gpubox:gpu1 is busy and could not be queued (--no-wait)');
  assert.equal(noWaitReason({ deviceName: null, selector: 'vram>=40G' }, null), 'every device matching vram>=40G is busy and could not be queued (--no-wait)');
});

test('--explain names the matching hosts that take no new job: drained, away or offline, with their count', () => {
  const d = (hostName: string, hostOff: boolean, hostStatus: 'online' | 'away' | 'offline') => ({ hostName, hostOff, hostStatus });
  const off = hostsOff(
    [d('h3', true, 'online'), d('h1', false, 'online'), d('h3', true, 'online'), d('h2', false, 'offline'), d('h4', true, 'offline')],
    new Map([['h3', 'driver upgrade']]),
  );
  assert.deepEqual(off, [
    { host: 'h2', devices: 1, status: 'offline', reason: null },
    { host: 'h3', devices: 2, status: 'off', reason: 'driver upgrade' },
    { host: 'h4', devices: 1, status: 'off', reason: null },
  ]);
  assert.equal(
    hostOffText(off[1]!),
    'host h3 (2 matching devices) is drained (driver upgrade): nothing new starts there until an operator runs rc admin host on h3',
  );
  assert.match(hostOffText(off[0]!), /^host h2 \(1 matching device\) is offline: its worker is not connected/);
});
