// A terminal in the browser: /terminal?device=<host:gpuN>, ?select=<selector>,
// or ?job=<id> to re-attach (components/terminal-page.tsx). It is a tty job
// like rc run --tty's, submitted as web:<token name> (a bound token: its
// name, or <prefix>web); closing the page for longer than RC_TTY_GRACE_S ends it.
import { TerminalPage } from '../../../components/terminal-page';

type Search = Promise<Record<string, string | string[] | undefined>>;

export default async function Terminal({ searchParams }: { searchParams: Search }) {
  const q = await searchParams;
  const one = (k: string) => (typeof q[k] === 'string' && q[k] !== '' ? (q[k] as string) : null);
  return <TerminalPage device={one('device')} select={one('select')} job={one('job')} />;
}
