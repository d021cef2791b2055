// Sign in with a client or admin token (the same tokens the CLI uses).
import { SignInForm } from '../../components/sign-in-form';

export default function LoginPage() {
  return (
    <main className="flex min-h-screen items-center justify-center bg-zinc-50 px-4">
      <div className="w-full max-w-md rounded-lg border border-zinc-200 bg-white p-6 shadow-sm">
        <h1 className="mb-1 font-mono text-2xl font-bold">rc</h1>
        <p className="mb-4 text-sm text-zinc-600">
          Sign in with a client token (read-only, plus your own jobs and terminals) or an admin token. On a local checkout, <code>npm start</code> wrote them to{' '}
          <code>.rc/local.json</code>.
        </p>
        <SignInForm />
      </div>
    </main>
  );
}
