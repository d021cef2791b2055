// Sign in with a client or admin token (the same tokens the CLI uses).
export default function LoginPage() {
  return (
    <main>
      <h1>rc: sign in</h1>
      <p>
        Paste a client or admin token. On a local checkout, <code>npm start</code> wrote them to <code>.rc/local.json</code>.
      </p>
      <form method="post" action="/api/session">
        <input name="token" type="password" autoComplete="off" size={60} aria-label="token" required />
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}
