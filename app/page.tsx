// The fleet at a glance: hosts and devices with their state. A plain page;
// the live dashboard comes later.
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { loadDevices, loadHosts } from '../server/fleet';
import { pageDb, pageIdentity } from '../server/page-session';

export const dynamic = 'force-dynamic';

const cell = { padding: '0.25rem 0.75rem', borderBottom: '1px solid #ddd', textAlign: 'left' as const };

export default async function FleetPage() {
  const identity = await pageIdentity((await cookies()).get('rc_session')?.value);
  if (!identity) redirect('/login');
  const [hosts, devices] = await Promise.all([loadHosts(pageDb().client), loadDevices(pageDb().client)]);
  return (
    <main>
      <h1>rc fleet</h1>
      <p>Signed in as {identity.name} ({identity.kind}).</p>
      <h2>Hosts</h2>
      <table style={{ borderCollapse: 'collapse' }}>
        <thead><tr><th style={cell}>Host</th><th style={cell}>Status</th><th style={cell}>Last seen</th><th style={cell}>Worker</th></tr></thead>
        <tbody>
          {hosts.map((h) => (
            <tr key={h.name} data-host={h.name}>
              <td style={cell}>{h.name}</td><td style={cell}>{h.status}</td><td style={cell}>{h.lastSeenAt ?? 'never'}</td><td style={cell}>{h.workerVersion ?? '-'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Devices</h2>
      <table style={{ borderCollapse: 'collapse' }}>
        <thead><tr><th style={cell}>Device</th><th style={cell}>State</th><th style={cell}>Holder</th><th style={cell}>Labels</th></tr></thead>
        <tbody>
          {devices.map((d) => (
            <tr key={d.name} data-device={d.name}>
              <td style={cell}>{d.name}</td>
              <td style={cell}>{d.state}</td>
              <td style={cell}>{d.holder ? `${d.holder.submitter} (${d.holder.jobId})` : '-'}</td>
              <td style={cell}>{Object.entries(d.labels).map(([k, v]) => `${k}=${v}`).join(', ')}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </main>
  );
}
