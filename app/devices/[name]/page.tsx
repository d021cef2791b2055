// One device: its state, holder and labels, and a button that opens a terminal on it.
import { cookies } from 'next/headers';
import { notFound, redirect } from 'next/navigation';
import { loadDevices } from '../../../server/fleet';
import { webSubmitter } from '../../../server/auth';
import { pageDb, pageIdentity } from '../../../server/page-session';

export const dynamic = 'force-dynamic';

const cell = { padding: '0.25rem 0.75rem', borderBottom: '1px solid #ddd', textAlign: 'left' as const };

export default async function DevicePage({ params }: { params: Promise<{ name: string }> }) {
  const identity = await pageIdentity((await cookies()).get('rc_session')?.value);
  if (!identity) redirect('/login');
  const name = decodeURIComponent((await params).name);
  const device = (await loadDevices(pageDb().client)).find((d) => d.name === name);
  if (!device) notFound();
  return (
    <main>
      <p>
        <a href="/">← fleet</a>
      </p>
      <h1>{device.name}</h1>
      <p>
        State: <strong data-testid="device-state">{device.state}</strong>
        {device.holder ? ` (held by ${device.holder.submitter}, job ${device.holder.jobId})` : ''}
        {device.unhealthy ? <span style={{ color: '#b00' }}> unhealthy: {device.unhealthy.reason}</span> : null}
      </p>
      <form method="get" action="/terminal">
        <input type="hidden" name="device" value={device.name} />
        <button type="submit" disabled={device.state === 'unhealthy'}>
          Open terminal
        </button>
        <span style={{ marginLeft: '0.75rem', fontSize: 13, color: '#555' }}>
          An interactive shell on this device, as {webSubmitter(identity)}; it waits in the queue if the device is busy.
        </span>
      </form>
      <h2>Labels</h2>
      <table style={{ borderCollapse: 'collapse' }}>
        <tbody>
          {Object.entries(device.labels).map(([k, v]) => (
            <tr key={k}>
              <td style={cell}>{k}</td>
              <td style={cell}>{v}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </main>
  );
}
