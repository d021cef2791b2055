// How a queued job's place in line is shown, everywhere (rc ps, rc describe,
// the dashboard's Queue page): counted from #1, as people say "first in line".
// The API's `position` stays what it is, the number of queued jobs ahead of it
// (0: next), so the place shown is that count plus one.

/** `#1` for the job next in line (position 0); null for a job with no place in line yet (it waits on something else). */
export function placeInLine(position: number | null): string | null {
  return position === null ? null : `#${position + 1}`;
}
