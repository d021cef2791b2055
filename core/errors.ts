// Error codes are part of rc's API: the CLI prints `rc: <code>: <sentence>`
// and every REST error has the body { error: { code, message } }.

export const ERROR_STATUS = {
  bad_request: 400,
  bad_selector: 400,
  /** rc run --env: a malformed name or value, or too many or too big (core/job-options.ts). */
  bad_env: 400,
  /** rc run --env: a name rc sets itself (CUDA_VISIBLE_DEVICES, RC_JOB_ID, ...). */
  reserved_env: 400,
  /** rc run --gpu: a malformed choice, a model neither rc nor the fleet knows, or --gpu beside --gpus or -d. */
  bad_gpu: 400,
  /** rc run --cloud-only, --cloud, --max-price, --spot: one without --cloud-only, or a --cloud that names no configured provider account. */
  bad_cloud: 400,
  /** rc run --name: not a valid job name. */
  bad_name: 400,
  /** rc run --array: a malformed range, a %0 cap, more than 10,000 tasks, an index past 1,000,000 (core/array-spec.ts). */
  bad_array: 400,
  /** rc run --after / --after-any: a job named there does not exist (or this token may not see it). */
  bad_dependency: 400,
  unauthorized: 401,
  forbidden: 403,
  not_job_owner: 403,
  not_found: 404,
  /** The route exists, but not for this method (the answer's Allow header lists those it takes). */
  method_not_allowed: 405,
  /** A job name given instead of an id matches several jobs: the message lists their ids. */
  ambiguous_name: 409,
  no_matching_device: 409,
  busy: 409,
  quarantined: 409,
  conflict: 409,
  /** rc admin host rm of a host that still runs jobs: turn it off and let them finish first. */
  host_busy: 409,
  /** A submit past a limit of its token or team (rc admin limit): the message names the limit, the figure and when a budget refills. */
  over_limit: 409,
  /** A terminal another token's clients are attached to (the /tty socket's refusal). */
  terminal_busy: 409,
  payload_too_large: 413,
  /** Too many refused tokens from the client's address (RC_AUTH_FAILURES): no token from it is checked until Retry-After passes. */
  rate_limited: 429,
  /** A request the session cookie authenticates that changes something must be JSON (no browser page can send that without a preflight). */
  unsupported_media_type: 415,
  unavailable: 503,
  /** The controller cannot reach its Postgres now; nothing was changed. Retry shortly. */
  database_unavailable: 503,
  /** Postgres refused the change for lack of disk space; nothing was changed. An operator must free space. */
  database_full: 507,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * When each code is answered, as docs/api.md's table shows it (npm run docs writes the table from this;
 * test/unit/docs-tables.test.ts fails when they differ). A code without its sentence does not compile.
 */
export const ERROR_MEANING: Record<ErrorCode, string> = {
  bad_request:
    'The body is not valid JSON, or it fails its schema (the message names the field); a query parameter is invalid; a path has a malformed `%`-escape; a query value or a string in the body holds a NUL byte; Postgres refused a value the request carried; or the request target is not a path (an absolute URL, `*`, a path that starts with `//` or holds a `\\`), or the request is not valid HTTP/1.1 (431 for headers that are too large, 408 for a request that does not arrive in time).',
  bad_selector: 'A selector does not parse.',
  bad_gpu: 'A job\'s `gpu` choices do not parse, name a model neither rc nor the fleet knows, or come beside `gpus` or `device` ("GPU choices").',
  bad_cloud:
    "A job's `cloud`, `maxPrice` or `spot` comes without `cloudOnly`, or `cloudOnly` comes on a hold or beside `device`, or `cloud` names no provider account this controller has (the message lists them).",
  bad_name: 'A job\'s `name` is not a job name ("Job names and environments").',
  bad_array:
    'An array\'s `array` spec does not parse, has a `%0` cap, names an index twice or past 1,000,000, or more than 10,000 tasks; or its `job` is not a plain `rc run` ("Arrays").',
  bad_env: 'A job\'s `env` has a name that is not an environment variable name, or too many variables, or too many bytes ("Job names and environments").',
  reserved_env:
    "A job's `env` names a variable rc sets itself: `CUDA_VISIBLE_DEVICES`, `CUDA_DEVICE_ORDER`, `NVIDIA_VISIBLE_DEVICES`, `RC_JOB_ID`, `RC_DEVICES`, `RC_WORKSPACE`, `RC_SCRATCH`, `RC_SHARED`, `RC_SECRETS`.",
  bad_dependency: 'A job\'s `after` or `afterAny` names a job that does not exist, or that the token may not see ("Dependencies"); nothing was stored.',
  unauthorized: 'No valid token.',
  forbidden:
    'The token is of the wrong kind; a bound token claims a submitter outside its binding ("Bound tokens"); a change authenticated by the session cookie that does not come from the dashboard\'s own origin ("The session cookie"); or a sign-in from another site\'s page (`POST /api/session`).',
  not_job_owner: 'Kill of a job whose submitter is not yours, with a non-admin token.',
  terminal_busy:
    'The terminal socket only: opening (re-attaching to) a terminal while clients signed in with another token are attached to it, on any controller. The message names them and since when ("The terminal socket").',
  not_found: 'No such job; no such route.',
  method_not_allowed: 'The route exists, but not for this method; the `Allow` header lists the methods it takes. A `CONNECT` (rc is not a proxy).',
  ambiguous_name: 'A job name given for `:id` names several jobs ("Job names and environments"); the message lists their ids, newest first.',
  no_matching_device: 'No device can ever satisfy the job.',
  busy: '`wait: false`, and no matching device was free.',
  quarantined: 'The job names an unhealthy device, or every device that matches is unhealthy.',
  conflict:
    'Creating a team that exists; clearing a device that is not quarantined; probing a host whose worker is not connected; a sheet or note written with an `ifUpdatedAt` that is no longer the stored version.',
  host_busy: 'Removing a host that still runs jobs (a hold counts): turn it off, let them end, then remove it.',
  over_limit:
    "A job, hold or terminal past a limit of its token or its team (`rc admin limit`): `priority`, `maxRuntimeS` or a hold's `ttlS` over a ceiling, more GPUs than the scope may ever hold, as many jobs waiting as its `queued` limit, or its GPU-hours budget used up. The message names the scope, the limit and the figure, and for a budget when use leaves its window.",
  payload_too_large:
    "The body is over its limit: 2 MiB of JSON, 16 MiB for `rc cp`'s upload, 1 MiB for a piece of a job's stdin. The answer says `Connection: close`: the rest of the body is not read.",
  rate_limited:
    "More than `RC_AUTH_FAILURES` refused tokens (or session cookies) came from the client's address within `RC_AUTH_FAILURE_WINDOW_S`: no token from that address is checked, a valid one included, until the `Retry-After` header's seconds have passed.",
  unsupported_media_type: 'A change authenticated by the session cookie whose body is not `application/json`.',
  unavailable: "The device's worker is not connected or did not answer (`rc cp`).",
  database_unavailable:
    'The controller cannot reach its Postgres now (`Retry-After: 5`). A request refused at once changed nothing; one in flight when the database stopped answering says it may or may not have taken effect.',
  database_full:
    'The controller\'s Postgres refused the change for lack of disk space; nothing was changed. Reads and job output keep working (output is held until it can be stored: "When the database is out of disk space" in docs/operators.md); an operator must free space where Postgres keeps its data.',
  internal: "A bug. The controller's log has the details.",
};

export interface ApiErrorBody {
  error: { code: ErrorCode; message: string };
}

/** Whether `code` is one of rc's error codes (an answer read back, as an MCP tool reads the API's). */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_STATUS, code);
}

/** An error that is meant for the user: a stable code and a sentence they can act on. */
export class RcError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
  get status(): number {
    return ERROR_STATUS[this.code];
  }
  toBody(): ApiErrorBody {
    return { error: { code: this.code, message: this.message } };
  }
}
