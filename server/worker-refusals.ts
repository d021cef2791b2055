// A report about a job that is not its host's current assignment is dropped.
// A stale worker sends a few after a reconnect; a host forging reports sends
// many. At most one audit row per host a minute, with the count since the last.
import type { Sql } from './db';

/** Refused reports of one host are audited at most this often (with their count). */
const REFUSAL_AUDIT_EVERY_MS = 60_000;

export class Refusals {
  private readonly byHost = new Map<string, { count: number; auditedAt: number }>();

  constructor(
    private readonly sql: Sql,
    private readonly log: (msg: string) => void,
  ) {}

  refused(hostName: string, event: string, jobId: string): void {
    const now = Date.now();
    const r = this.byHost.get(hostName) ?? { count: 0, auditedAt: 0 };
    r.count += 1;
    this.byHost.set(hostName, r);
    if (now - r.auditedAt < REFUSAL_AUDIT_EVERY_MS) return;
    const detail = { host: hostName, event, jobId, refused: r.count };
    r.count = 0;
    r.auditedAt = now;
    this.log(`refused ${detail.refused} report(s) from ${hostName} about jobs it does not run now, stale or forged (the latest: ${event} for ${jobId})`);
    this
      .sql`insert into audit (actor, action, target, detail) values (${`host:${hostName}`}, 'worker.refused', ${jobId}, ${JSON.stringify(detail)}::text::jsonb)`.catch(
      (err: unknown) => this.log(`auditing refused reports from ${hostName}: ${String(err)}`),
    );
  }
}
