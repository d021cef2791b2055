// What this controller keeps of the running jobs whose workers are connected
// here: each job's host and fence (a report about a job must come from its
// host with its fence), when it last printed (the controller's idle clock),
// how much of its output is stored (the bound per job), and the highest
// output sequence handled (what a heartbeat acknowledges). Nothing here
// outlives a restart that matters: a hello rebuilds it (resume points).

export class RunningHere {
  private readonly fences = new Map<string, { host: string; fence: number }>();
  private readonly lastOutput = new Map<string, number>();
  private readonly storedBytes = new Map<string, number>();
  private readonly handledSeq = new Map<string, { seq: number; host: string }>();
  /** The jobs in handledSeq by host: a heartbeat's acknowledgements cost its host's jobs, not every job here. */
  private readonly handledOf = new Map<string, Set<string>>();

  /** A job sent to its worker now: its clock starts. */
  started(jobId: string, host: string, fence: number): void {
    this.fences.set(jobId, { host, fence });
    this.lastOutput.set(jobId, Date.now());
  }

  /** A job a worker's hello still runs: kept, its clock left as it was (or started now). */
  adopted(jobId: string, host: string, fence: number): void {
    this.fences.set(jobId, { host, fence });
    if (!this.lastOutput.has(jobId)) this.lastOutput.set(jobId, Date.now());
  }

  /** Whether a report about the job comes from its host with its current fence. */
  fenceOk(host: string, jobId: string, fence: number): boolean {
    const f = this.fences.get(jobId);
    return f !== undefined && f.host === host && f.fence === fence;
  }

  /** The job printed (or its terminal did) now. */
  printed(jobId: string): void {
    this.lastOutput.set(jobId, Date.now());
  }

  /** Seconds since the job last printed, as far as this controller saw; 0 when unknown. */
  idleSeconds(jobId: string): number {
    const at = this.lastOutput.get(jobId);
    return at === undefined ? 0 : (Date.now() - at) / 1000;
  }

  /** Bytes of the job's output stored (Infinity: past the bound); undefined when not known here. */
  stored(jobId: string): number | undefined {
    return this.storedBytes.get(jobId);
  }

  setStored(jobId: string, bytes: number): void {
    this.storedBytes.set(jobId, bytes);
  }

  /** The highest output sequence handled (stored, or dropped past the bound) for the job; 0 when none. */
  handledUpTo(jobId: string): number {
    return this.handledSeq.get(jobId)?.seq ?? 0;
  }

  handled(jobId: string, seq: number, host: string): void {
    const before = this.handledSeq.get(jobId);
    if (before && before.host !== host) this.handledOf.get(before.host)?.delete(jobId);
    this.handledSeq.set(jobId, { seq, host });
    const mine = this.handledOf.get(host) ?? new Set<string>();
    mine.add(jobId);
    this.handledOf.set(host, mine);
  }

  /** What a heartbeat of `host` acknowledges: each of its jobs' handled sequence. */
  handledOn(host: string): { jobId: string; seq: number }[] {
    return [...(this.handledOf.get(host) ?? [])].map((jobId) => ({ jobId, seq: this.handledUpTo(jobId) }));
  }

  /** The job is over here (its exit was stored). */
  forget(jobId: string): void {
    this.fences.delete(jobId);
    this.lastOutput.delete(jobId);
    this.storedBytes.delete(jobId);
    const h = this.handledSeq.get(jobId);
    if (h) {
      const mine = this.handledOf.get(h.host);
      mine?.delete(jobId);
      if (mine?.size === 0) this.handledOf.delete(h.host);
    }
    this.handledSeq.delete(jobId);
  }
}
