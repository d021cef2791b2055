'use client';
// Taking a host out of service (admins): turn it off (no new jobs; the
// running ones finish), on again, or remove it (its worker stops for good).
// Each is audited; removing asks first, and is refused while jobs run there.
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { HostRow } from '../protocol/wire';
import { call } from './api-client';
import { useIsAdmin } from './providers';
import { Ago, Button, ErrorBox } from './ui';

export function HostServicePanel({ host, running }: { host: HostRow; running: number }) {
  const admin = useIsAdmin();
  const client = useQueryClient();
  const [reason, setReason] = useState('');
  const [confirmRemove, setConfirmRemove] = useState(false);
  const done = () => {
    setReason('');
    setConfirmRemove(false);
    void client.invalidateQueries();
  };
  const off = useMutation({ mutationFn: () => call('POST /api/admin/hosts/:name/off', { name: host.name, body: { reason } }), onSuccess: done });
  const on = useMutation({ mutationFn: () => call('POST /api/admin/hosts/:name/on', { name: host.name, body: {} }), onSuccess: done });
  const rm = useMutation({ mutationFn: () => call('DELETE /api/admin/hosts/:name', { name: host.name }), onSuccess: done });
  const error = off.error ?? on.error ?? rm.error;
  const pending = off.isPending || on.isPending || rm.isPending;

  if (host.removed)
    return (
      <section aria-label="Service" className="mb-4 rounded-lg border border-zinc-300 bg-zinc-50 p-4 text-sm text-zinc-700">
        <h2 className="font-semibold">Removed</h2>
        <p className="mt-1">
          Removed by {host.removed.by} <Ago at={host.removed.at} />: its credential is revoked and its worker has stopped.{' '}
          <code>rc admin host add {host.name}</code> registers it again.
        </p>
      </section>
    );

  return (
    <section aria-label="Service" className={`mb-4 rounded-lg border p-4 text-sm ${host.off ? 'border-amber-300 bg-amber-50' : 'border-zinc-200 bg-white'}`}>
      <h2 className="font-semibold">{host.off ? (running ? 'Off (busy)' : 'Off') : 'In service'}</h2>
      {host.off ? (
        <p className="mt-1 text-amber-900">
          Turned off by {host.off.by} <Ago at={host.off.since} />
          {host.off.reason ? `: ${host.off.reason}` : ''}. No new jobs start here
          {running ? `; ${running === 1 ? 'the running job finishes' : `the ${running} running jobs finish`}` : ''}.
        </p>
      ) : (
        <p className="mt-1 text-zinc-600">It takes jobs. Turn it off to drain it: the running jobs finish, no new ones start.</p>
      )}
      {admin ? (
        <div className="mt-3 flex flex-wrap items-end gap-2">
          {host.off ? (
            <Button onClick={() => on.mutate()} disabled={pending}>
              Turn on
            </Button>
          ) : (
            <form
              className="flex flex-wrap items-end gap-2"
              onSubmit={(e) => {
                e.preventDefault();
                off.mutate();
              }}
            >
              <label className="flex min-w-56 flex-col text-xs text-zinc-600">
                Why (optional, shown and audited)
                <input
                  value={reason}
                  onChange={(e) => setReason(e.target.value)}
                  maxLength={500}
                  className="mt-1 rounded border border-zinc-300 bg-white px-2 py-1 text-sm text-zinc-900"
                />
              </label>
              <Button type="submit" disabled={pending}>
                Turn off
              </Button>
            </form>
          )}
          {confirmRemove ? (
            <>
              <Button kind="danger" onClick={() => rm.mutate()} disabled={pending}>
                Remove {host.name} for good
              </Button>
              <Button onClick={() => setConfirmRemove(false)} disabled={pending}>
                Keep it
              </Button>
            </>
          ) : (
            <Button
              kind="danger"
              onClick={() => setConfirmRemove(true)}
              disabled={pending}
              title={running ? 'Turn it off and let its jobs finish first' : undefined}
            >
              Remove…
            </Button>
          )}
        </div>
      ) : null}
      {confirmRemove ? (
        <p className="mt-2 text-xs text-red-800">
          Removing revokes the host's credential: its worker stops for good and says how to uninstall it.{' '}
          {running ? 'It still runs jobs: it will be refused until they end.' : ''}
        </p>
      ) : null}
      <ErrorBox error={error} />
    </section>
  );
}
