'use client';
// The sign-in form: it posts the token as JSON and shows the controller's
// refusal in place. Without JavaScript the same form posts itself (a 303 to /).
import { useState } from 'react';
import { ApiError, call } from './api-client';
import { Button, ErrorBox } from './ui';

export function SignInForm() {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      method="post"
      action="/api/session"
      onSubmit={async (e) => {
        e.preventDefault();
        const token = String(new FormData(e.currentTarget).get('token') ?? '');
        setBusy(true);
        try {
          await call('POST /api/session', { body: { token } });
          window.location.assign('/');
        } catch (err) {
          setError(err instanceof ApiError && err.code === 'unauthorized' ? new Error('That token is not a valid client or admin token.') : err);
          setBusy(false);
        }
      }}
    >
      <label htmlFor="token" className="mb-1 block text-sm font-medium">
        Token
      </label>
      <input
        id="token"
        name="token"
        type="password"
        autoComplete="off"
        required
        aria-label="token"
        className="mb-3 w-full rounded border border-zinc-300 px-2 py-1.5 font-mono text-sm"
      />
      <ErrorBox error={error} />
      <Button kind="primary" type="submit" disabled={busy} className="w-full py-1.5">
        Sign in
      </Button>
    </form>
  );
}
