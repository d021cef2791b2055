'use client';
// A quarantined device: why, since when, and the evidence, shown before an
// admin may clear it; clearing needs a reason, and is audited.
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { DeviceRow } from '../../protocol/wire';
import { call } from '../api-client';
import { useIsAdmin } from '../providers';
import { Ago, Button, ErrorBox } from '../ui';

export function QuarantinePanel({ device }: { device: DeviceRow }) {
  const admin = useIsAdmin();
  const client = useQueryClient();
  const [reason, setReason] = useState('');
  const clear = useMutation({
    mutationFn: () => call('POST /api/admin/devices/:name/clear', { name: device.name, body: { reason } }),
    onSuccess: () => {
      setReason('');
      void client.invalidateQueries();
    },
  });
  const u = device.unhealthy;
  if (!u) return null;
  return (
    <section aria-label="Quarantine" className="mb-4 rounded-lg border border-red-300 bg-red-50 p-4">
      <h2 className="text-sm font-semibold text-red-900">Quarantined</h2>
      <p className="mt-1 text-sm text-red-900">
        {u.reason} (since <Ago at={u.since} />)
      </p>
      <h3 className="mt-2 text-xs font-medium text-red-900">Evidence</h3>
      <pre className="mt-1 max-h-48 overflow-auto rounded bg-white p-2 text-xs">{JSON.stringify(u.evidence, null, 2)}</pre>
      {admin ? (
        <form
          className="mt-3 flex flex-wrap items-end gap-2"
          onSubmit={(e) => {
            e.preventDefault();
            clear.mutate();
          }}
        >
          <label className="flex min-w-64 flex-1 flex-col text-xs text-red-900">
            Why is it fine again? (required, kept in the audit log)
            <input
              value={reason}
              onChange={(e) => setReason(e.target.value)}
              required
              minLength={3}
              className="mt-1 rounded border border-red-300 bg-white px-2 py-1 text-sm text-zinc-900"
            />
          </label>
          <Button kind="danger" type="submit" disabled={clear.isPending || reason.trim().length < 3}>
            Clear quarantine
          </Button>
        </form>
      ) : (
        <p className="mt-2 text-xs text-red-900">An admin clears a quarantine once the cause is fixed.</p>
      )}
      <ErrorBox error={clear.error} />
    </section>
  );
}
