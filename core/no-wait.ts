// rc run --no-wait: why a job that could not start at once was not queued.
// With --gpu, each choice that was busy is named, and the free devices that
// match no choice are counted: "every device is busy" while some are free
// reads as a fault.

/** One --gpu choice as the fleet stood when the job was refused. */
export interface ChoiceFree {
  /** As --gpu writes it: `A100:2`. */
  label: string;
  /** Its family or model: `A100`. */
  name: string;
  gpus: number;
  /** Its matching devices that are free. */
  free: number;
  /** The most of those on one host. */
  freeOnOneHost: number;
}

/** The refusal's sentence; `otherFree`: free devices that match none of the choices (only counted with choices). */
export function noWaitReason(job: { deviceName: string | null; selector: string }, choices: readonly ChoiceFree[] | null, otherFree = 0): string {
  const notQueued = 'could not be queued (--no-wait)';
  if (job.deviceName !== null) return `${job.deviceName} is busy and ${notQueued}`;
  const matching = job.selector ? ` matching ${job.selector}` : '';
  if (!choices?.length) return `every device${matching} is busy and ${notQueued}`;
  const busy = choices.filter((c) => c.free === 0).map((c) => c.name);
  const parts = busy.length ? [`every ${busy.join(' and ')} device${matching} is busy`] : [];
  for (const c of choices) {
    if (c.free > 0 && c.freeOnOneHost < c.gpus) parts.push(`no host has ${c.gpus} free ${c.name} devices${matching}`);
  }
  const others = otherFree > 0 ? ` (${otherFree} other device${otherFree === 1 ? ' is' : 's are'} free but match${otherFree === 1 ? 'es' : ''} no choice)` : '';
  return `--gpu ${choices.map((c) => c.label).join(',')}: ${parts.join(', and ')}${others}; the job ${notQueued}`;
}
