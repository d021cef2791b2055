// `rc jobs --since`: a duration back from now (2h, 7d, 1h30m) or a point in
// time (an ISO 8601 date or time). One reading for the CLI and the controller.
import { parseDuration } from './duration';

/** The longest look back: a year and a day, as the audit log's `since`. */
export const MAX_SINCE_S = 366 * 86400;

/** An ISO 8601 date, or date and time with an optional zone (`2026-05-01`, `2026-05-01T12:00Z`, `2026-05-01T12:00:00+02:00`). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

export const SINCE_RULE = 'a duration back from now (30m, 2h, 7d; at most 366d) or an ISO time (2026-05-01, 2026-05-01T12:00Z)';

/** The time `text` names, or null when it names none (a duration of 0 or past a year, a malformed time). */
export function parseSince(text: string, now: number = Date.now()): Date | null {
  const t = text.trim();
  if (t === '') return null;
  if (ISO_TIME.test(t)) {
    const at = Date.parse(t);
    return Number.isNaN(at) ? null : new Date(at);
  }
  const s = parseDuration(t);
  if (s === null || s < 1 || s > MAX_SINCE_S) return null;
  return new Date(now - s * 1000);
}
