// Who may be attached to a terminal at once. As tmux shares one's own
// session: every client signed in with the token whose clients hold the
// terminal attaches beside them (all see its output, all may type). Another
// token's client (an admin's: only the token that opened a terminal and admin
// tokens may attach at all) is refused, naming who holds it, while the
// holder's clients are attached on any controller; when nobody is, it may
// attach. The token that opened the terminal is its owner: coming back, it
// takes the terminal back from another token's clients, which are detached.
//
// Each controller with clients of a terminal keeps a tty_viewers row, fresh
// while they stay (server/tty.ts refreshes it), gone when the last leaves; a
// row whose controller died goes stale. The rule itself is ruleFor().
import type { Identity } from './auth';
import type { Sql } from './db';
import type { JobRow } from './jobs/job-view';

/** Who a client is: its token, and how to name it in a refusal. */
export interface Viewer {
  tokenId: number;
  who: string;
}

/** Whose clients hold a terminal (here, or on another controller), and since when. */
export interface Holder extends Viewer {
  since: Date;
}

export function viewerOf(identity: Identity, web: boolean): Viewer {
  return { tokenId: identity.tokenId, who: `${identity.kind} token "${identity.name}" through ${web ? 'the dashboard' : 'rc'}` };
}

/**
 * A client of `viewer` opening a terminal that `holder` holds (null: nobody attached): 'beside' the
 * holder's clients (its own token, or nobody's), 'take' it from them (its owner), or 'refuse'.
 */
export function ruleFor(viewer: Viewer, holder: Holder | null, owner: boolean): 'beside' | 'take' | 'refuse' {
  if (!holder || holder.tokenId === viewer.tokenId) return 'beside';
  return owner ? 'take' : 'refuse';
}

/** The refusal's sentence (code terminal_busy). */
export function busyMessage(jobId: string, holder: Holder): string {
  const since = holder.since.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return `the terminal ${jobId} is in use by ${holder.who} since ${since}; it can be opened here once they leave it (or rc kill ${jobId} ends it)`;
}

export type Admission = { ok: true; job: JobRow; took: Holder | null } | { ok: false; holder: Holder };

/**
 * Whether `viewer` may attach to the terminal beside the clients on other controllers (this controller's own
 * are the caller's to judge): the job's row is locked, so clients opening it at once on several controllers
 * take turns. Admitted, this controller's row says so, and the job as it is now comes back; a taken
 * terminal's other rows go (their controllers detach their clients, told on the bus).
 */
export function admitViewer(sql: Sql, jobId: string, controller: string, viewer: Viewer, owner: boolean, staleS: number): Promise<Admission> {
  return sql.begin(async (tx) => {
    const [job] = await tx<JobRow[]>`select * from jobs where id = ${jobId} for update`;
    const others = await tx<(Holder & { controller: string })[]>`
      select controller, token_id, who, since from tty_viewers
      where job_id = ${jobId} and controller <> ${controller} and token_id <> ${viewer.tokenId} and seen_at > now() - make_interval(secs => ${staleS})
      order by since`;
    const holder = others[0] ?? null;
    const rule = ruleFor(viewer, holder, owner);
    if (rule === 'refuse') return { ok: false, holder: holder! };
    if (rule === 'take') await tx`delete from tty_viewers where job_id = ${jobId} and controller <> ${controller} and token_id <> ${viewer.tokenId}`;
    await upsert(tx as unknown as Sql, jobId, controller, viewer);
    return { ok: true, job: job!, took: rule === 'take' ? holder : null };
  }) as Promise<Admission>;
}

/** This controller's clients of the terminal are `viewer`'s (a new terminal's first, or a refresh). */
export async function recordViewers(sql: Sql, jobId: string, controller: string, viewer: Viewer): Promise<void> {
  await upsert(sql, jobId, controller, viewer);
}

function upsert(sql: Sql, jobId: string, controller: string, viewer: Viewer) {
  return sql`
    insert into tty_viewers (job_id, controller, token_id, who, since, seen_at) values (${jobId}, ${controller}, ${viewer.tokenId}, ${viewer.who}, now(), now())
    on conflict (job_id, controller) do update set token_id = excluded.token_id, who = excluded.who, seen_at = now(),
      since = case when tty_viewers.token_id = excluded.token_id then tty_viewers.since else excluded.since end`;
}

/** This controller's clients of these terminals are still there (a row is made when a client joins, never here: one that left stays gone). */
export async function viewersSeen(sql: Sql, controller: string, rows: readonly { jobId: string; viewer: Viewer }[]): Promise<void> {
  if (!rows.length) return;
  await sql`
    update tty_viewers v set seen_at = now()
    from unnest(${rows.map((r) => r.jobId)}::text[], ${rows.map((r) => r.viewer.tokenId)}::int8[]) as x(j, t)
    where v.job_id = x.j and v.controller = ${controller} and v.token_id = x.t`;
}

/** The last client of the terminal here left. */
export async function viewersLeft(sql: Sql, jobId: string, controller: string): Promise<void> {
  await sql`delete from tty_viewers where job_id = ${jobId} and controller = ${controller}`;
}

/** Rows of ended terminals, and stale ones (a controller that died holding them), go. */
export async function pruneViewers(sql: Sql, staleS: number): Promise<void> {
  await sql`
    delete from tty_viewers v using jobs j
    where j.id = v.job_id and (j.state not in ('queued', 'running') or v.seen_at < now() - make_interval(secs => ${staleS * 10}))`;
}
