// The audit log's export (the Audit page's CSV and JSON buttons): every entry
// the filters match, as recorded. Pure, so the unit tests pin the quoting.
import type { AuditEntry } from '../protocol/wire';

const COLUMNS = ['id', 'at', 'actor', 'action', 'target', 'origin', 'tokenId', 'detail'] as const;

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, a quote, a line break or edge spaces, its quotes
 * doubled. Text a spreadsheet would run as a formula (=, +, -, @, a tab or CR first) gets a leading ' so that
 * opening an export cannot run what someone typed into a job name or a reason.
 */
export function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) && !/^-?\d+(\.\d+)?$/.test(value) ? `'${value}` : value;
  return /[",\r\n]|^\s|\s$/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The entries as CSV: a header line, then one line per entry (CRLF between lines); `detail` as its JSON, `at` in UTC as recorded. */
export function auditCsv(entries: readonly AuditEntry[]): string {
  const cell = (e: AuditEntry, c: (typeof COLUMNS)[number]) => {
    const v = e[c];
    return v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  };
  return `${[COLUMNS.join(','), ...entries.map((e) => COLUMNS.map((c) => csvField(cell(e, c))).join(','))].join('\r\n')}\r\n`;
}

export function auditJson(entries: readonly AuditEntry[]): string {
  return `${JSON.stringify(entries, null, 2)}\n`;
}
