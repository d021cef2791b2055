// The server side of a page for one thing (a job, a device, a host, an array):
// when the API knows no such thing, the page is the 404 page with status 404,
// not a page that says so with 200. The API decides, with the browser's own
// cookie; any other answer (not signed in, the API away) leaves it to the page,
// which says so itself.
import { headers } from 'next/headers';
import { notFound } from 'next/navigation';

/** How long the check waits for the API before the page renders without it. */
const NOT_FOUND_CHECK_MS = 5000;

/** `path`: the API route that reads the thing, e.g. /api/jobs/<id> (escaped). */
export async function notFoundUnless(path: string): Promise<void> {
  // The controller's own address, set when it listens (server/dashboard.ts).
  const api = process.env.RC_DASHBOARD_API_URL;
  const cookie = (await headers()).get('cookie');
  if (!api || !cookie) return;
  // Bounded: a page must never wait on its own controller for ever (an answer that does not come leaves it to the page).
  const res = await fetch(`${api}${path}`, { headers: { cookie }, cache: 'no-store', signal: AbortSignal.timeout(NOT_FOUND_CHECK_MS) }).catch(() => null);
  // Read to the end (a small JSON answer): cancelling it instead never settles under Next's fetch.
  await res?.text().catch(() => '');
  if (res?.status === 404) notFound();
}
