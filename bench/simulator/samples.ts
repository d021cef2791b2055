// GPU samples that look like a real card's: each heartbeat the memory and
// utilisation take a step towards where a card in that state sits (a job:
// busy and full; a hold: someone working by hand; idle: near zero) plus some
// noise. Pure apart from the random source, which tests may pass.
import type { GpuSample } from '../../protocol/worker';
import type { GpuModel } from './catalog';

export type DeviceActivity = 'idle' | 'job' | 'hold';

export interface WalkState {
  util: number;
  memMiB: number;
  /** Where this job's memory settles: each job takes its own share of the card. */
  jobMemShare: number;
}

export function initialWalk(random: () => number = Math.random): WalkState {
  return { util: 0, memMiB: 1 + Math.floor(random() * 4), jobMemShare: 0.6 + random() * 0.35 };
}

/** One heartbeat's step; `foreignMiB` is memory held by a process rc did not start. */
export function step(state: WalkState, model: GpuModel, activity: DeviceActivity, foreignMiB: number, random: () => number = Math.random): WalkState {
  const total = model.memTotalMiB;
  const [lo, hi] = model.busyUtil;
  let utilTarget: number;
  let memTarget: number;
  let jobMemShare = state.jobMemShare;
  if (activity === 'job') {
    utilTarget = lo + random() * (hi - lo);
    memTarget = total * jobMemShare;
  } else if (activity === 'hold') {
    utilTarget = random() < 0.3 ? 20 + random() * 50 : random() * 5;
    memTarget = total * 0.25;
  } else {
    utilTarget = random() * 2;
    memTarget = 2;
    // The next job takes a share of its own.
    jobMemShare = 0.6 + random() * 0.35;
  }
  if (foreignMiB > 0) {
    utilTarget = Math.max(utilTarget, 15 + random() * 20);
    memTarget = Math.max(memTarget, foreignMiB);
  }
  const util = clamp(state.util + (utilTarget - state.util) * 0.5 + (random() - 0.5) * 6, 0, 100);
  const memMiB = clamp(state.memMiB + (memTarget - state.memMiB) * 0.6 + (activity === 'idle' ? 0 : (random() - 0.5) * total * 0.02), 0, total);
  return { util, memMiB, jobMemShare };
}

/** As nvidia-smi prints it: whole MiB and whole percent. */
export function toSample(index: number, model: GpuModel, state: WalkState): GpuSample {
  return { index, name: model.smiName, memTotalMiB: model.memTotalMiB, memUsedMiB: Math.round(state.memMiB), utilPct: Math.round(state.util) };
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}
