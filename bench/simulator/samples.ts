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
    // Someone working by hand now and then; most of a hold's time the card sits idle (the manual's own figure).
    utilTarget = random() < 0.02 ? 20 + random() * 50 : 0;
    memTarget = total * 0.25;
  } else {
    utilTarget = 0;
    memTarget = 2;
    // The next job takes a share of its own.
    jobMemShare = 0.6 + random() * 0.35;
  }
  if (foreignMiB > 0) {
    utilTarget = Math.max(utilTarget, 15 + random() * 20);
    memTarget = Math.max(memTarget, foreignMiB);
  }
  // Noise only on a card at work: an idle one reads 0-1%, as nvidia-smi shows it.
  const util = clamp(state.util + (utilTarget - state.util) * 0.5 + (utilTarget >= 5 ? (random() - 0.5) * 6 : 0), 0, 100);
  const memMiB = clamp(state.memMiB + (memTarget - state.memMiB) * 0.6 + (activity === 'idle' ? 0 : (random() - 0.5) * total * 0.02), 0, total);
  return { util, memMiB, jobMemShare };
}

/** As nvidia-smi prints it: whole MiB and whole percent; `procs`, the compute processes on it (a job's, someone's in a hold at work, a foreign one). */
export function toSample(index: number, model: GpuModel, state: WalkState, procs: number): GpuSample {
  return { index, name: model.smiName, memTotalMiB: model.memTotalMiB, memUsedMiB: Math.round(state.memMiB), utilPct: Math.round(state.util), procs };
}

/** The compute processes a simulated card reports: a job's, a hold's while someone works on it, a foreign one. */
export function processesOn(activity: DeviceActivity, state: WalkState, foreignMiB: number): number {
  if (foreignMiB > 0 || activity === 'job') return 1;
  return activity === 'hold' && state.util > 5 ? 1 : 0;
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}
