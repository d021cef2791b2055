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
  /** rc run --name: not a valid job name. */
  bad_name: 400,
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
  payload_too_large: 413,
  /** A request the session cookie authenticates that changes something must be JSON (no browser page can send that without a preflight). */
  unsupported_media_type: 415,
  unavailable: 503,
  /** The controller cannot reach its Postgres now; nothing was changed. Retry shortly. */
  database_unavailable: 503,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ApiErrorBody {
  error: { code: ErrorCode; message: string };
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
