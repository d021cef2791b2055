// What a simulated host is: its name, its GPUs and any labels of its own.
import { HOST_NAME } from '../../core/schedule';
import { type GpuModelName, findGpuModel } from './catalog';

export interface SimDeviceSpec {
  model: GpuModelName;
  /**
   * A process rc did not start sits on this GPU (its memory shows in every
   * sample), and the host reports it the way the real worker does
   * (device:unhealthy with the process as evidence): the controller quarantines it.
   */
  quarantine?: boolean;
}

export interface SimHostSpec {
  /** The host's name: 1–63 letters, digits, `.`, `_`, `-`. */
  name: string;
  devices: SimDeviceSpec[];
  /** Declared host labels besides `simulated=true`, which every simulated host has. */
  labels?: Record<string, string>;
}

/** `count` devices of one model; `quarantine` lists the indexes that carry a foreign process. */
export function uniformHost(name: string, model: string, count: number, opts: { labels?: Record<string, string>; quarantine?: number[] } = {}): SimHostSpec {
  const found = findGpuModel(model);
  if (!found) throw new Error(`unknown GPU model ${model}`);
  return {
    name,
    labels: opts.labels,
    devices: Array.from({ length: count }, (_, i) => ({ model: found, ...(opts.quarantine?.includes(i) ? { quarantine: true } : {}) })),
  };
}

/** The problem with a spec, in a sentence, or null when it is fine. */
export function specProblem(spec: SimHostSpec): string | null {
  if (!HOST_NAME.test(spec.name)) return `host name ${JSON.stringify(spec.name)} is not 1-63 letters, digits, ., _ or - starting with a letter or digit`;
  if (spec.devices.length < 1 || spec.devices.length > 64) return `host ${spec.name} has ${spec.devices.length} devices; a host has 1 to 64`;
  for (const d of spec.devices) if (!findGpuModel(d.model)) return `host ${spec.name}: unknown GPU model ${d.model}`;
  for (const key of Object.keys(spec.labels ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_.-]{0,99}$/.test(key)) return `host ${spec.name}: label key ${JSON.stringify(key)} is not a valid label key`;
    if (key === 'simulated') return `host ${spec.name}: the simulated label is the simulator's own`;
  }
  return null;
}
