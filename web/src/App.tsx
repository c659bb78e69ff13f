import { useCallback, useEffect, useState } from 'react';
import { del, get, setCsrfToken, whenSignedOut, type Session } from './lib/api';
import { Link, navigate, pathOf, useRoute } from './lib/router';
import { SignIn } from './pages/SignIn';
import { Dashboard } from './pages/Dashboard';
import { Runs } from './pages/Runs';
import { BatchDetail, Batches } from './pages/Batches';
import { RunDetail } from './pages/RunDetail';
import { Playground } from './pages/Playground';
import { Workflows } from './pages/Workflows';
import { Editor } from './pages/Editor';
import { Audit } from './pages/Audit';
import { can, type SessionContext } from './lib/session';


const NAV: [string, string][] = [
  ['/', 'Dashboard'],
  ['/playground', 'Playground'],
  ['/workflows', 'Workflows'],
  ['/runs', 'Runs'],
  ['/batches', 'Batches'],
];

export function App() {
  const route = useRoute();
  const [session, setSession] = useState<Session | null | undefined>(undefined);

  const refresh = useCallback(() => {
    get<Session>('/session').then(
      (s) => {
        setCsrfToken(s.csrf_token);
        setSession(s);
      },
      () => setSession(null),
    );
  }, []);

  useEffect(() => {
    whenSignedOut(() => setSession(null));
    refresh();
  }, [refresh]);

  if (session === undefined) return <p className="loading" role="status">Loading…</p>;
  if (session === null) {
    return (
      <SignIn
        onSignedIn={(s) => {
          setCsrfToken(s.csrf_token);
          setSession(s);
        }}
      />
    );
  }

  const signOut = async () => {
    try {
      await del('/session');
    } finally {
      setSession(null);
      navigate('/', true);
    }
  };

  const path = pathOf(route);
  const ctx: SessionContext = { session, refresh };
  let page;
  if (path === '/' || path === '') page = <Dashboard ctx={ctx} />;
  else if (path === '/runs') page = <Runs route={route} />;
  else if (path.startsWith('/runs/')) page = <RunDetail id={decodeURIComponent(path.slice(6))} ctx={ctx} />;
  else if (path === '/batches') page = <Batches />;
  else if (path.startsWith('/batches/')) page = <BatchDetail id={decodeURIComponent(path.slice(9))} ctx={ctx} />;
  else if (path === '/playground') page = <Playground route={route} ctx={ctx} />;
  else if (path === '/workflows') page = <Workflows ctx={ctx} />;
  else if (path === '/audit') page = <Audit />;
  else if (path === '/editor' || path.startsWith('/editor/')) page = <Editor name={path.length > 8 ? decodeURIComponent(path.slice(8)) : null} route={route} ctx={ctx} />;
  else page = <NotFound />;

  const active = (to: string) => (to === '/' ? path === '/' || path === '' : path.startsWith(to));
  return (
    <div className={path.startsWith('/editor') ? 'shell wide' : 'shell'}>
      <a href="#main" className="skip">Skip to content</a>
      <header className="top">
        <Link to="/" className="brand">Atelier</Link>
        <nav aria-label="Console">
          {NAV.map(([to, label]) => (
            <Link key={to} to={to} aria-current={active(to) ? 'page' : undefined}>
              {label}
            </Link>
          ))}
          {can(session, 'keys') && (
            <Link to="/audit" aria-current={active('/audit') ? 'page' : undefined}>
              Audit log
            </Link>
          )}
          <a href="/console/docs">API reference</a>
        </nav>
        <div className="who">
          <span data-testid="balance" title="Token balance">
            {session.balance.toLocaleString()} tokens
          </span>
          <span className="account">{session.account}</span>
          <button type="button" onClick={signOut}>Sign out</button>
        </div>
      </header>
      <main id="main">{page}</main>
    </div>
  );
}

function NotFound() {
  return (
    <section>
      <h1>Not found</h1>
      <p>
        Nothing here. <Link to="/">Back to the dashboard</Link>.
      </p>
    </section>
  );
}
