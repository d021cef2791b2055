// Exit reports that arrive while others are being stored go together in the
// next statement (group commit): a fleet whose jobs end by the hundred ends
// them in a few round trips, each a job's row and leases as endJob's; when
// reports are few, each is stored at once, alone, as before.
import { type EndDeps, endJobs, type JobEnd } from './finish';
import type { JobRow } from './job-view';

type Ended = (JobRow & { again?: boolean }) | null;

interface Waiting {
  item: JobEnd;
  resolve: (row: Ended) => void;
  reject: (err: unknown) => void;
}

export class EndBatcher {
  private waiting: Waiting[] = [];
  private inFlight = 0;

  constructor(
    private readonly deps: EndDeps,
    /** Statements at once (Postgres works on more than one; a batch waits only while all are busy). */
    private readonly parallel = 2,
    /** The most ends in one statement. */
    private readonly max = 500,
  ) {}

  /** Ends a running job as endJob(deps, jobId, end, { from: ['running'], fence, host }) does. */
  end(item: JobEnd): Promise<Ended> {
    return new Promise<Ended>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    while (this.inFlight < this.parallel && this.waiting.length) void this.run(this.take());
  }

  /** The next batch: in arrival order, a job at most once (a second report of it goes in a later one). */
  private take(): Waiting[] {
    const batch: Waiting[] = [];
    const rest: Waiting[] = [];
    const ids = new Set<string>();
    for (const w of this.waiting) {
      if (batch.length < this.max && !ids.has(w.item.jobId)) {
        ids.add(w.item.jobId);
        batch.push(w);
      } else rest.push(w);
    }
    this.waiting = rest;
    return batch;
  }

  private async run(batch: Waiting[]): Promise<void> {
    this.inFlight += 1;
    try {
      const rows = await endJobs(
        this.deps,
        batch.map((w) => w.item),
        { from: ['running'] },
      );
      const byId = new Map(rows.map((r) => [r.id, r]));
      for (const w of batch) w.resolve(byId.get(w.item.jobId) ?? null);
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      this.inFlight -= 1;
      this.kick();
    }
  }
}
