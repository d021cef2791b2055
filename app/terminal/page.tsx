// A terminal in the browser: /terminal?device=<host:gpuN>, ?select=<selector>,
// or ?job=<id> to re-attach. It is a tty job like rc run --tty's, submitted as
// web:<token name> (a bound token: its name, or <prefix>web); closing the page
// for longer than RC_TTY_GRACE_S ends it.
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { pageIdentity } from '../../server/page-session';
import { TerminalView } from './terminal-view';

export const dynamic = 'force-dynamic';

type Search = Promise<Record<string, string | string[] | undefined>>;

export default async function TerminalPage({ searchParams }: { searchParams: Search }) {
  const identity = await pageIdentity((await cookies()).get('rc_session')?.value);
  if (!identity) redirect('/login');
  const q = await searchParams;
  const one = (k: string) => (typeof q[k] === 'string' && q[k] !== '' ? (q[k] as string) : null);
  const job = one('job');
  const device = one('device');
  const select = one('select');
  const what = job ? `job ${job}` : device ? device : `a device matching ${select ?? '(any)'}`;
  return (
    <main>
      <p>
        <a href="/">← fleet</a>
      </p>
      <h1>Terminal: {what}</h1>
      <TerminalView device={device} select={select} job={job} />
    </main>
  );
}
