// How a value zod refused is told to whoever sent it: the first issue, as
// `where: what` (`argv.0: ...`), or just `what` when the issue is about the
// whole value. Every place that turns a parse failure into a message (REST
// bodies, the terminal socket, rc cp's query, the controller's and the
// worker's environment, the worker's config file) says it this way.
import type { z } from 'zod';

/** The message for a failed parse; `say` may word an issue itself (return undefined to keep zod's words). */
export function zodMessage(error: z.ZodError, say?: (issue: z.core.$ZodIssue, where: string) => string | undefined): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid value';
  const path = issue.path.map(String).join('.');
  const where = path ? `${path}: ` : '';
  return say?.(issue, where) ?? `${where}${issue.message}`;
}

/** The codes a custom issue may carry (protocol/api.ts's checkJobOptions and checkPlacement). */
const ISSUE_CODES = ['bad_name', 'bad_env', 'reserved_env', 'bad_gpu', 'bad_cloud', 'bad_array'] as const;
type IssueCode = (typeof ISSUE_CODES)[number];

/**
 * The error code for a failed parse: the one its first issue carries in
 * `params.code` (protocol/api.ts's checkJobOptions sets bad_name, bad_env,
 * reserved_env; checkPlacement bad_gpu; checkCloud bad_cloud), else bad_request.
 */
export function zodCode(error: z.ZodError): 'bad_request' | IssueCode {
  const issue = error.issues[0];
  const code = issue?.code === 'custom' ? (issue.params as { code?: unknown } | undefined)?.code : undefined;
  return ISSUE_CODES.includes(code as IssueCode) ? (code as IssueCode) : 'bad_request';
}
