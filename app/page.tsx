// The fleet at a glance: hosts and devices with their state. A plain page;
// the live dashboard comes later.
import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import type { GpuView } from '../protocol/wire';
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
      <p>
        Signed in as {identity.name} ({identity.kind}).
      </p>
      <h2>Hosts</h2>
      <table style={{ borderCollapse: 'collapse' }}>
        <thead>
          <tr>
            <th style={cell}>Host</th>
            <th style={cell}>Status</th>
            <th style={cell}>Last seen</th>
            <th style={cell}>Worker</th>
          </tr>
        </thead>
        <tbody>
          {hosts.map((h) => (
            <tr key={h.name} data-host={h.name}>
              <td style={cell}>{h.name}</td>
              <td style={cell}>{h.status}</td>
              <td style={cell}>{h.lastSeenAt ?? 'never'}</td>
              <td style={cell}>{h.workerVersion ?? '-'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Devices</h2>
      <form method="get" action="/terminal" style={{ margin: '0.5rem 0 1rem' }}>
        <label>
          Open a terminal on a device matching <input name="select" placeholder="vram>=40G (empty: any)" size={30} aria-label="selector" />
        </label>
        <button type="submit">Open terminal</button>
        <span style={{ marginLeft: '0.75rem', fontSize: 13, color: '#555' }}>or pick a device below</span>
      </form>
      <table style={{ borderCollapse: 'collapse' }}>
        <thead>
          <tr>
            <th style={cell}>Device</th>
            <th style={cell}>State</th>
            <th style={cell}>Holder</th>
            <th style={cell}>GPU</th>
            <th style={cell}>Labels</th>
          </tr>
        </thead>
        <tbody>
          {devices.map((d) => (
            <tr key={d.name} data-device={d.name}>
              <td style={cell}>
                <a href={`/devices/${encodeURIComponent(d.name)}`}>{d.name}</a>
              </td>
              <td style={cell}>
                {d.state}
                {d.unhealthy ? <div style={{ color: '#b00' }}>{d.unhealthy.reason}</div> : null}
              </td>
              <td style={cell}>{d.holder ? `${d.holder.submitter} (${d.holder.jobId})` : '-'}</td>
              <td style={cell}>{d.gpu ? <GpuBars gpu={d.gpu} /> : '-'}</td>
              <td style={cell}>
                {Object.entries(d.labels)
                  .map(([k, v]) => `${k}=${v}`)
                  .join(', ')}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </main>
  );
}

/** Utilisation and memory of the last heartbeat's sample, as two small bars. */
function GpuBars({ gpu }: { gpu: GpuView }) {
  const mem = gpu.memTotalMiB ? Math.round((100 * gpu.memUsedMiB) / gpu.memTotalMiB) : 0;
  const bar = (pct: number, label: string) => (
    <div title={label} style={{ width: 120, height: 8, background: '#eee', margin: '2px 0' }}>
      <div style={{ width: `${Math.min(100, pct)}%`, height: 8, background: pct > 90 ? '#c33' : '#47a' }} />
    </div>
  );
  return (
    <div style={{ fontSize: 12 }}>
      {bar(gpu.utilPct ?? 0, `utilisation ${gpu.utilPct ?? 'n/a'}%`)}util {gpu.utilPct ?? 'n/a'}%
      {bar(mem, `memory ${gpu.memUsedMiB} of ${gpu.memTotalMiB} MiB`)}mem {gpu.memUsedMiB}/{gpu.memTotalMiB} MiB
    </div>
  );
}
