// The REST route table. A route's name is its method and path pattern, as
// docs/api.md heads it (`POST /api/jobs/:id/kill`); ROUTES says who may call
// each (plain data the router registers from), and RouteTypes, type-level
// only, what each takes and answers. The router checks every handler's answer
// against it and the CLI's client types its callers by it, so a changed answer
// fails to compile on both sides. The CLI needs nothing of it at run time (the
// name holds the method and path), so its bundle carries no table. No zod
// here: the bodies' schemas are protocol/bodies.ts's BODIES, server-side.
import type {
  AuditEntry,
  AuditQuery,
  Cleared,
  ClearQuarantineBody,
  Copied,
  CopyQuery,
  StdinQuery,
  UsageQuery,
  UsageReport,
  UsageSeries,
  UsageSeriesQuery,
  TeamsUsage,
  TeamsUsageQuery,
  CreatedToken,
  CreateTokenBody,
  CreateTeamBody,
  LimitView,
  SetLimitsBody,
  SetTeamBody,
  SetTokenBody,
  TeamView,
  DeviceDescription,
  DeviceSummary,
  DeviceSamples,
  Explanation,
  ExplainBody,
  ExtendHoldBody,
  Fleet,
  Notice,
  HostDescription,
  HostRow,
  JobsQuery,
  JobView,
  KillJobBody,
  PsPage,
  PsQuery,
  QueueEntry,
  RegisteredHost,
  RegisterHostBody,
  ReleaseHoldBody,
  RevokedToken,
  SamplesQuery,
  SheetView,
  SignInBody,
  StreamQuery,
  SubmitJobBody,
  SubmitArrayBody,
  ArrayView,
  TokenKind,
  TurnHostOffBody,
  TokenView,
  Whoami,
  WriteSheetBody,
  MachineCosts,
  MachineView,
  OffersQuery,
  OffersView,
} from './wire';

/** client: a client or an admin token; admin: an admin token; host: a host credential; public: anyone (the browser's sign-in). */
export type Access = 'client' | 'admin' | 'host' | 'public';
export type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

/** Who may call each route. */
export const ROUTES = {
  'GET /api/whoami': 'client',
  'GET /api/notices': 'client',
  'GET /api/devices': 'client',
  'GET /api/hosts': 'client',
  'GET /api/fleet': 'client',
  'GET /api/hosts/:name': 'client',
  'GET /api/samples': 'client',
  'GET /api/queue': 'client',
  'GET /api/audit': 'client',
  'GET /api/usage': 'client',
  'GET /api/usage/series': 'client',
  'GET /api/usage/teams': 'client',
  'GET /api/devices/:name': 'client',
  'PUT /api/devices/:name/note': 'admin',
  'GET /api/hosts/:name/sheet': 'client',
  'PUT /api/hosts/:name/sheet': 'admin',
  'POST /api/explain': 'client',
  'POST /api/admin/hosts/:name/probe': 'admin',
  'POST /api/jobs': 'client',
  'GET /api/jobs': 'client',
  'GET /api/ps': 'client',
  'GET /api/jobs/:id/stream': 'client',
  'GET /api/jobs/:id': 'client',
  'POST /api/jobs/:id/kill': 'client',
  'POST /api/arrays': 'client',
  'GET /api/arrays/:id': 'client',
  'POST /api/arrays/:id/kill': 'client',
  'PUT /api/devices/:name/files': 'client',
  'POST /api/jobs/:id/stdin': 'client',
  'GET /api/devices/:name/files': 'client',
  'POST /api/holds/:id/release': 'client',
  'POST /api/holds/:id/extend': 'client',
  'POST /api/admin/hosts': 'admin',
  'POST /api/admin/hosts/:name/off': 'admin',
  'POST /api/admin/hosts/:name/on': 'admin',
  'DELETE /api/admin/hosts/:name': 'admin',
  'GET /api/worker/whoami': 'host',
  'GET /install.sh': 'public',
  'GET /install/rc.sh': 'public',
  'GET /api/cli/:file': 'public',
  'GET /api/worker/package': 'host',
  'GET /api/worker/package/sha256': 'host',
  'POST /api/admin/devices/:name/clear': 'admin',
  'POST /api/admin/tokens': 'admin',
  'GET /api/admin/tokens': 'admin',
  'POST /api/admin/tokens/:id/revoke': 'admin',
  'PUT /api/admin/tokens/:id': 'admin',
  'POST /api/admin/teams': 'admin',
  'GET /api/admin/teams': 'admin',
  'PUT /api/admin/teams/:name': 'admin',
  'GET /api/admin/limits': 'admin',
  'PUT /api/admin/limits/:scope': 'admin',
  'GET /api/offers': 'client',
  'GET /api/machines': 'client',
  'DELETE /api/machines/:id': 'admin',
  'POST /api/session': 'public',
  'DELETE /api/session': 'public',
  'GET /metrics': 'client',
} as const satisfies { [N in RouteName]: Access };

/**
 * GET routes that create or change something: rc cp's download takes a short
 * lease, a job and an audit row. A page's <img> or <link> makes the browser
 * send the session cookie with a GET, so these take a bearer token only.
 */
export const GETS_WITH_EFFECTS: ReadonlySet<RouteName> = new Set<RouteName>(['GET /api/devices/:name/files']);

/**
 * What each route takes and answers: `query` (its parameters), `body` (JSON,
 * checked by protocol/bodies.ts's BODIES), `response` (the JSON answer);
 * `stream`: with `Accept: application/x-rc-stream` it answers with a frame
 * stream of JobEvents (core/frames.ts) instead; `bytes`: its answer is the raw
 * bytes (or text of its own content type); `form`: it also takes a urlencoded form (answered with a redirect).
 */
export interface RouteTypes {
  'GET /api/whoami': { response: Whoami };
  /** What this controller wants people to know now (its database out of disk space); empty when all is well. */
  'GET /api/notices': { response: { notices: Notice[] } };
  /** Each device with its merged labels; with details=1 each is a DeviceRow (every label's source and age too). */
  'GET /api/devices': { query: { select?: string; details?: '1'; all?: '1' }; response: { devices: DeviceSummary[] } };
  /** all=1: removed hosts too. */
  'GET /api/hosts': { query: { all?: '1' }; response: { hosts: HostRow[] } };
  'GET /api/fleet': { query: { host?: string }; response: Fleet };
  'GET /api/hosts/:name': { response: HostDescription };
  'GET /api/samples': { query: SamplesQuery; response: { samples: DeviceSamples[] } };
  /** The queue in the order it will be considered, each job with why it waits. */
  'GET /api/queue': { response: { jobs: QueueEntry[] } };
  'GET /api/audit': { query: AuditQuery; response: { entries: AuditEntry[] } };
  'GET /api/usage': { query: UsageQuery; response: UsageReport };
  /** Leased and idle device-seconds per time bucket, per key (the Usage page's chart). */
  'GET /api/usage/series': { query: UsageSeriesQuery; response: UsageSeries };
  /** Each team: members, limits, where it stands against them and in fair share, and its use per day (the Teams page). */
  'GET /api/usage/teams': { query: TeamsUsageQuery; response: TeamsUsage };
  'GET /api/devices/:name': { response: DeviceDescription };
  'PUT /api/devices/:name/note': { body: WriteSheetBody; response: { note: SheetView | null } };
  'GET /api/hosts/:name/sheet': { response: { sheet: SheetView | null } };
  'PUT /api/hosts/:name/sheet': { body: WriteSheetBody; response: { sheet: SheetView | null } };
  'POST /api/explain': { body: ExplainBody; response: Explanation };
  'POST /api/admin/hosts/:name/probe': { response: { requested: boolean } };
  /** 201 with the job, or a frame stream from `queued` to `exit`. */
  /** `notices`: what to tell the submitter once (a default --max-runtime applied); absent when none. */
  'POST /api/jobs': { body: SubmitJobBody; response: { job: JobView; notices?: string[] }; stream: true };
  'GET /api/jobs': { query: JobsQuery; response: { jobs: JobView[] } };
  /** Running jobs, then queued ones in queue order, a page at a time. */
  'GET /api/ps': { query: PsQuery; response: PsPage };
  'GET /api/jobs/:id/stream': { query: StreamQuery; stream: true };
  'GET /api/jobs/:id': { response: { job: JobView } };
  'POST /api/jobs/:id/kill': { body: KillJobBody; response: { job: JobView } };
  /** rc run --array: the array and every task stored in one transaction (201), all queued; `notices` as for a job. */
  'POST /api/arrays': { body: SubmitArrayBody; response: { array: ArrayView; notices?: string[] } };
  /** An array by its id (or its --name): its spec, cap and tasks' counts by state (GET /api/jobs?array= lists the tasks). */
  'GET /api/arrays/:id': { response: { array: ArrayView } };
  /** Every task: queued ones cancelled, running ones killed (by the array's submitter or an admin). */
  'POST /api/arrays/:id/kill': { body: KillJobBody; response: { array: ArrayView } };
  /** The body is the file's bytes (application/octet-stream). */
  'PUT /api/devices/:name/files': { query: CopyQuery; body: Buffer; response: Copied };
  /** The next piece of a job's stdin (rc run reading a pipe); `closed`: send no more. */
  'POST /api/jobs/:id/stdin': { query: StdinQuery; body: Buffer; response: { closed: boolean } };
  /** The file's bytes; `X-RC-Lease` names the lease it was read under. */
  'GET /api/devices/:name/files': { query: CopyQuery; bytes: true };
  'POST /api/holds/:id/release': { body: ReleaseHoldBody; response: { job: JobView } };
  'POST /api/holds/:id/extend': { body: ExtendHoldBody; response: { job: JobView } };
  'POST /api/admin/hosts': { body: RegisterHostBody; response: RegisteredHost };
  /** No new jobs on the host; its running ones finish. `already`: it was off before (by whom it says). */
  'POST /api/admin/hosts/:name/off': { body: TurnHostOffBody; response: { host: HostRow; already: boolean } };
  'POST /api/admin/hosts/:name/on': { body: Record<string, never>; response: { host: HostRow; already: boolean } };
  /** Revokes the host's credentials (its worker stops for good), stops listing and scheduling its devices; refused (host_busy) while it runs jobs. */
  'DELETE /api/admin/hosts/:name': { response: { host: HostRow; revokedTokens: number } };
  'GET /api/worker/whoami': { response: { host: string | null } };
  /** The install script a new host runs (text/x-shellscript; server/install-script.ts). */
  'GET /install.sh': { bytes: true };
  /** The CLI's installer for people's and agents' machines (text/x-shellscript; server/cli-install.ts). */
  'GET /install/rc.sh': { bytes: true };
  /** A file it installs: rc-<platform>.gz (the standalone rc), rc.cjs or rc-tty.cjs (the Node CLI); X-RC-SHA256 is its hash. */
  'GET /api/cli/:file': { bytes: true };
  /** The worker package (application/gzip): the bundled worker and node-pty. */
  'GET /api/worker/package': { bytes: true };
  /** Its SHA-256, as sha256sum prints it: `<hex>  rc-worker-<version>.tar.gz`. */
  'GET /api/worker/package/sha256': { bytes: true };
  'POST /api/admin/devices/:name/clear': { body: ClearQuarantineBody; response: Cleared };
  'POST /api/admin/tokens': { body: CreateTokenBody; response: CreatedToken };
  'GET /api/admin/tokens': { response: { tokens: TokenView[] } };
  'POST /api/admin/tokens/:id/revoke': { response: RevokedToken };
  /** Moves a token (`:id` its id, or a name that names one live token) to a team; `was` its team before. */
  'PUT /api/admin/tokens/:id': { body: SetTokenBody; response: { token: TokenView; was: string } };
  'POST /api/admin/teams': { body: CreateTeamBody; response: { team: TeamView } };
  'GET /api/admin/teams': { response: { teams: TeamView[] } };
  'PUT /api/admin/teams/:name': { body: SetTeamBody; response: { team: TeamView } };
  /** Every scope's limits, or one scope's (`scope=team:vision`, `scope=token:agent-a`). */
  'GET /api/admin/limits': { query: { scope?: string }; response: { limits: LimitView[] } };
  /** Sets or clears (null, `none`) some limits of a scope (`team:vision`, `token:agent-a`, `token:12`); the others are kept. */
  'PUT /api/admin/limits/:scope': { body: SetLimitsBody; response: { limits: LimitView } };
  /** The cheapest offers that fit across the configured provider accounts (rc offers); an account that failed to answer is in `warnings`. */
  'GET /api/offers': { query: OffersQuery; response: OffersView };
  /** Machines rented from providers, live ones (all=1: terminated too), each with its cost so far; what all of them cost by team and job. */
  'GET /api/machines': { query: { all?: '1' | '0' }; response: { machines: MachineView[]; costs: MachineCosts } };
  /** Deletes the machine's instance (rc machines rm): its state once asked (terminating until the provider says gone). */
  'DELETE /api/machines/:id': { response: { machine: MachineView } };
  /** Sets the session cookie; a form post is answered 303 to /. */
  'POST /api/session': { body: SignInBody; response: { kind: Exclude<TokenKind, 'host'>; name: string }; form: true };
  'DELETE /api/session': { response: { ok: true } };
  /** The controller's metrics in Prometheus's text format (docs/operators.md, "Metrics"); not under /api, where Prometheus looks. */
  'GET /metrics': { bytes: true };
}

export type RouteName = keyof RouteTypes;

/** A route's method and path pattern, from its name. */
export function splitRoute(name: RouteName): { method: Method; path: string } {
  const space = name.indexOf(' ');
  return { method: name.slice(0, space) as Method, path: name.slice(space + 1) };
}

/** The path parameters of a path pattern: `/api/jobs/:id/kill` → `{ id: string }`. */
export type PathParams<P extends string> = P extends `${string}:${infer K}/${infer Rest}`
  ? { [k in K | keyof PathParams<`/${Rest}`>]: string }
  : P extends `${string}:${infer K}`
    ? { [k in K]: string }
    : Record<never, string>;

export type PathOf<N extends RouteName> = N extends `${Method} ${infer P}` ? P : never;
export type ParamsOf<N extends RouteName> = PathParams<PathOf<N>>;
export type QueryOf<N extends RouteName> = RouteTypes[N] extends { query: infer Q } ? Q : undefined;
export type BodyOf<N extends RouteName> = RouteTypes[N] extends { body: infer B } ? B : undefined;
export type ResponseOf<N extends RouteName> = RouteTypes[N] extends { response: infer R } ? R : never;
export type AccessOf<N extends RouteName> = (typeof ROUTES)[N];

/** Routes with a JSON answer, a frame stream, raw bytes. */
export type JsonRoute = { [N in RouteName]: RouteTypes[N] extends { response: unknown } ? N : never }[RouteName];
export type StreamRoute = { [N in RouteName]: RouteTypes[N] extends { stream: true } ? N : never }[RouteName];
export type BytesRoute = { [N in RouteName]: RouteTypes[N] extends { bytes: true } ? N : never }[RouteName];

/** Routes whose body is JSON, checked by a schema of protocol/bodies.ts's BODIES (not rc cp's bytes, not the sign-in's form). */
export type JsonBodyRoute = {
  [N in RouteName]: RouteTypes[N] extends { body: infer B } ? (B extends Buffer ? never : RouteTypes[N] extends { form: true } ? never : N) : never;
}[RouteName];

/**
 * What a caller passes: the path's parameters (`{ id }` for `/api/jobs/:id`), and `query` and `body` when the
 * route takes them. No path parameter is named query or body.
 */
export type RouteInput<N extends RouteName> = ParamsOf<N> &
  (RouteTypes[N] extends { query: infer Q } ? (Record<never, never> extends Q ? { query?: Q } : { query: Q }) : { query?: undefined }) &
  (RouteTypes[N] extends { body: infer B } ? { body: B } : { body?: undefined });

/** The input as an argument list: optional when the route needs none. */
export type RouteArgs<N extends RouteName> = Record<never, never> extends RouteInput<N> ? [input?: RouteInput<N>] : [input: RouteInput<N>];
