import { useState, type FormEvent } from 'react';
import { explain, post, type Session } from '../lib/api';

export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const session = await post<Session>('/session', { api_key: key.trim() });
      setKey('');
      onSignedIn(session);
    } catch (err) {
      setError(explain(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="sign-in" id="main">
      <h1>Atelier</h1>
      <form onSubmit={submit} aria-describedby="sign-in-help">
        <label htmlFor="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          autoFocus
          spellCheck={false}
          placeholder="atl_…"
          value={key}
          onChange={(e) => setKey(e.target.value)}
          required
        />
        <button type="submit" disabled={busy || !key.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <p id="sign-in-help" className="hint">
          Sign in with one of your account’s API keys. The console keeps a session, not the key; revoking the key ends
          the session. The first key comes from <code>atelier admin account create NAME --json</code>.
        </p>
      </form>
    </main>
  );
}
