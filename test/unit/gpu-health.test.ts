import assert from 'node:assert/strict';
import { test } from 'node:test';
import { foreignProcesses, heldAfterJob } from '../../worker/gpu-health';
import { parseComputeApps, parseGpuSamples } from '../../worker/probes/parse';

const U0 = 'GPU-aaaaaaaa-0000-4000-8000-000000000000';
const U1 = 'GPU-aaaaaaaa-0000-4000-8000-000000000001';
const devices = [
  { index: 0, uuid: U0 },
  { index: 1, uuid: U1 },
];

test('GPU samples parse from the real query format, unreadable fields as null, lost GPUs skipped', () => {
  const csv = [
    '0, 81559, 1234, 87, NVIDIA H100 80GB HBM3',
    '1, 24564, 0, [N/A], NVIDIA GeForce RTX 4090',
    '2, [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost]',
    '',
  ].join('\n');
  assert.deepEqual(parseGpuSamples(csv), [
    { index: 0, name: 'NVIDIA H100 80GB HBM3', memTotalMiB: 81559, memUsedMiB: 1234, utilPct: 87 },
    { index: 1, name: 'NVIDIA GeForce RTX 4090', memTotalMiB: 24564, memUsedMiB: 0, utilPct: null },
  ]);
  assert.deepEqual(parseGpuSamples(''), []);
});

test('compute apps parse; "No running processes found" is none', () => {
  assert.deepEqual(parseComputeApps(`${U0}, 4242, 2048, /usr/bin/python3\n${U1}, 7, [N/A], a, b\n`), [
    { gpuUuid: U0, pid: 4242, usedMiB: 2048, name: '/usr/bin/python3' },
    { gpuUuid: U1, pid: 7, usedMiB: null, name: 'a, b' },
  ]);
  assert.deepEqual(parseComputeApps('No running processes found\n'), []);
});

test('memory held after a job quarantines exactly the job devices over the threshold, with the processes as evidence', () => {
  const samples = [
    { index: 0, name: 'H100', memTotalMiB: 81559, memUsedMiB: 4096, utilPct: 0 },
    { index: 1, name: 'H100', memTotalMiB: 81559, memUsedMiB: 9000, utilPct: 0 },
  ];
  const procs = [{ gpuUuid: U0, pid: 99, usedMiB: 4090, name: 'python' }];
  const q = heldAfterJob('j1', [devices[0]!], samples, procs, 1024);
  assert.equal(q.length, 1, 'gpu1 was not the job’s device');
  assert.equal(q[0]!.index, 0);
  assert.match(q[0]!.reason, /still held after job j1 ended: 4096 MiB used \(threshold 1024 MiB\), by pid 99 \(python\)/);
  assert.deepEqual(q[0]!.evidence.processes, [{ pid: 99, name: 'python', usedMiB: 4090 }]);
  assert.deepEqual(heldAfterJob('j1', [devices[0]!], [{ ...samples[0]!, memUsedMiB: 1024 }], [], 1024), [], 'at the threshold is fine');
});

test('a process without the job tag of the job running on its GPU is foreign; the job’s own are not', () => {
  const procs = [
    { gpuUuid: U0, pid: 10, usedMiB: 100, name: 'train' },
    { gpuUuid: U1, pid: 11, usedMiB: 200, name: 'squatter' },
    { gpuUuid: U1, pid: 12, usedMiB: 300, name: 'stale' },
    { gpuUuid: 'GPU-not-ours', pid: 13, usedMiB: 1, name: 'elsewhere' },
  ];
  const tags: Record<number, string> = { 10: 'jA', 12: 'jOld' };
  const q = foreignProcesses(
    devices,
    procs,
    (i) => (i === 0 ? 'jA' : null),
    (pid) => tags[pid] ?? null,
  );
  assert.equal(q.length, 1);
  assert.equal(q[0]!.index, 1);
  assert.match(q[0]!.reason, /pid 11 \(squatter, 200 MiB\), pid 12 \(stale, 300 MiB\) use the GPU and rc did not start it/);
  assert.deepEqual(
    (q[0]!.evidence.processes as { pid: number; rcJob: string | null }[]).map((p) => [p.pid, p.rcJob]),
    [
      [11, null],
      [12, 'jOld'],
    ],
  );
  assert.deepEqual(
    foreignProcesses(
      devices,
      [procs[0]!],
      () => 'jA',
      () => 'jA',
    ),
    [],
  );
});
