// npm run demo's simulated fleet (scripts/demo.mjs): different models, one GPU
// with a process rc did not start. The docs' examples are checked against it
// (test/unit/doc-examples.test.ts).
export interface DemoHost {
  name: string;
  model: string;
  count: number;
  labels: Record<string, string>;
  /** Indexes that carry a foreign process (quarantined). */
  quarantine?: number[];
}

export const DEMO_HOSTS: readonly DemoHost[] = [
  { name: 'gpubox-a', model: 'A100-80GB', count: 4, labels: { rack: 'r1', site: 'lab' } },
  { name: 'gpubox-b', model: 'H100', count: 8, labels: { rack: 'r2', site: 'lab', ib: 'true' } },
  { name: 'ws-rtx', model: 'RTX4090', count: 2, labels: { site: 'office' } },
  { name: 'infer-l4', model: 'L4', count: 1, labels: { site: 'lab', role: 'inference' } },
  { name: 'old-v100', model: 'V100', count: 2, labels: { site: 'lab' }, quarantine: [1] },
];
