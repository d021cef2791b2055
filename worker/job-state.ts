// The worker's own record of the jobs it runs, in <RC_STATE_DIR>/jobs.json,
// so that the next run of the worker (after a SIGKILL or a crash) knows whose
// processes to look for before it says hello. Written whole, to a temporary
// file renamed into place. No fsync: the file must outlive the worker, not the
// machine, and a machine that went down has no orphans left.
//
// A job without a cgroup is written before it runs anything: the file is the
// only way to it. A job with one, and every end, is written soon after, off
// the event loop, writes that fall together made one (a write and a rename took
// about 3 ms of the worker's loop per job when jobs came fast): a worker killed
// in between leaves the job's cgroup in its folder, which the next run kills
// and removes whether or not the file names it.
//
// It also keeps the jobs whose processes could not be killed (unkillable),
// until they are gone, so every hello reports them.
//
// <RC_STATE_DIR>/worker.pid holds the pid (and start time) of the worker that
// uses the folder: a second worker on the same folder would kill the first
// one's jobs as leftovers, so it refuses to start.
import { existsSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { zodMessage } from '../protocol/zod-message';
import type { PreviousJob, Unkillable } from './runtime';

const Job = z.object({
  jobId: z.string().max(64),
  fence: z.number().int().nullish(),
  devices: z.array(z.number().int()).max(64),
  cgroup: z.string().max(4096).nullable(),
});
const Leftover = Job.extend({ pids: z.array(z.number().int()).max(10_000) });
const File = z.object({ version: z.literal(1), jobs: z.array(Job), leftover: z.array(Leftover) });

export type LeftoverJob = z.infer<typeof Leftover>;

export class JobState {
  private readonly file: string;
  private readonly jobs = new Map<string, PreviousJob>();
  private leftover: LeftoverJob[] = [];
  /** The leftovers of the previous run (hello reports those; this run's own were reported as their jobs ended). */
  private readonly inherited = new Set<string>();
  /** The write under way, if any; `dirty`: the state changed since it took its copy. */
  private writing: Promise<void> | null = null;
  private dirty = false;

  constructor(
    private readonly dir: string,
    private readonly log: (msg: string) => void,
  ) {
    this.file = join(dir, 'jobs.json');
  }

  /**
   * Makes the folder (mode 0700) and claims it for this process: throws when
   * another live worker holds it. Returns what the previous run left: its jobs
   * and the leftovers it could not kill.
   */
  open(): { jobs: PreviousJob[]; leftover: LeftoverJob[] } {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.claim();
    if (!existsSync(this.file)) return { jobs: [], leftover: [] };
    let why: string;
    try {
      const parsed = File.safeParse(JSON.parse(readFileSync(this.file, 'utf8')));
      if (parsed.success) return { jobs: parsed.data.jobs, leftover: parsed.data.leftover };
      why = zodMessage(parsed.error);
    } catch (err) {
      why = err instanceof Error ? err.message.split('\n')[0]! : String(err);
    }
    this.log(`cannot read ${this.file} (${why}); only the job cgroups left in the worker's folder are cleaned up`);
    return { jobs: [], leftover: [] };
  }

  private claim(): void {
    const pidFile = join(this.dir, 'worker.pid');
    let holder: string[] = [];
    try {
      holder = readFileSync(pidFile, 'utf8').trim().split(' ');
    } catch {
      /* nobody */
    }
    const [pid, start] = holder;
    if (pid && start && Number(pid) !== process.pid && startTime(Number(pid)) === start) {
      throw new Error(`another worker (pid ${pid}) runs on the state folder ${this.dir}; stop it first, or give this one its own RC_STATE_DIR`);
    }
    this.writeAtomically(pidFile, `${process.pid} ${startTime(process.pid)}\n`);
  }

  /** After the clean-up of the previous run: what is left is only what could not be killed. */
  reset(unkillable: Unkillable[]): void {
    this.jobs.clear();
    // Their cgroups, if any, are found again in the worker's folder.
    this.leftover = unkillable.map((u) => ({ jobId: u.jobId, fence: u.fence ?? null, devices: u.devices, cgroup: null, pids: u.pids }));
    for (const u of unkillable) this.inherited.add(u.jobId);
    this.write();
  }

  /** Before the job runs anything: written at once without a cgroup, soon with one (above). */
  started(job: PreviousJob): void {
    this.jobs.set(job.jobId, job);
    if (job.cgroup === null) this.write();
    else this.writeSoon();
  }

  /** Once all of it is gone; with survivors it stays known as a leftover. */
  ended(jobId: string, survivors: number[] = []): void {
    const job = this.jobs.get(jobId);
    if (!job) return;
    this.jobs.delete(jobId);
    if (survivors.length) {
      this.leftover.push({ ...job, pids: survivors });
      this.write();
    } else this.writeSoon();
  }

  /** Resolves once the file says all that happened before the call. */
  async flushed(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** The previous run's leftovers whose processes are still there (what hello reports); the gone ones are forgotten. */
  unkillable(): Unkillable[] {
    const before = JSON.stringify(this.leftover);
    this.leftover = this.leftover.map((l) => ({ ...l, pids: l.pids.filter(isAlive) })).filter((l) => l.pids.length > 0);
    if (JSON.stringify(this.leftover) !== before) this.write();
    return this.leftover.filter((l) => this.inherited.has(l.jobId)).map((l) => ({ jobId: l.jobId, devices: l.devices, pids: l.pids }));
  }

  /** The worker stops: the folder is free for the next one. */
  release(): void {
    try {
      unlinkSync(join(this.dir, 'worker.pid'));
    } catch {
      /* gone */
    }
  }

  private text(): string {
    return `${JSON.stringify({ version: 1, jobs: [...this.jobs.values()], leftover: this.leftover })}\n`;
  }

  private write(): void {
    // A write under way took its copy before this change: it writes again after, so the last word is the newest.
    if (this.writing) this.dirty = true;
    try {
      this.writeAtomically(this.file, this.text());
    } catch (err) {
      this.log(`cannot write ${this.file}: ${(err as Error).message}`);
    }
  }

  /** One write at a time, off the event loop; what changes meanwhile goes in the next. */
  private writeSoon(): void {
    this.dirty = true;
    if (this.writing) return;
    this.writing = (async () => {
      const tmp = `${this.file}.tmp-${process.pid}-async`;
      while (this.dirty) {
        this.dirty = false;
        try {
          await writeFile(tmp, this.text(), { mode: 0o600 });
          await rename(tmp, this.file);
        } catch (err) {
          this.log(`cannot write ${this.file}: ${(err as Error).message}`);
        }
      }
      this.writing = null;
    })();
  }

  private writeAtomically(path: string, text: string): void {
    const tmp = `${path}.tmp-${process.pid}`;
    writeFileSync(tmp, text, { mode: 0o600 });
    renameSync(tmp, path);
  }
}

/** A process's start time (field 22 of /proc/<pid>/stat): with the pid, it names one process for good. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2)[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
