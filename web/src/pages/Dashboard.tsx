import { useState } from 'react';
import { can, type SessionContext } from '../lib/session';
import {
  del,
  explain,
  get,
  post,
  put,
  type Key,
  type LedgerEntry,
  type Scope,
  type Spend,
  type UsageDay,
  type WebhookEndpoint,
} from '../lib/api';
import { when } from '../lib/format';
import { useLoad } from '../lib/hooks';
import { Link } from '../lib/router';

export function Dashboard({ ctx }: { ctx: SessionContext }) {
  return (
    <section className="dashboard">
      <h1>Dashboard</h1>
      <div className="cards">
        <div className="card balance">
          <h2>Balance</h2>
          <p className="big" data-testid="dashboard-balance">
            {ctx.session.balance.toLocaleString()} <span>tokens</span>
          </p>
          <p className="hint">Grants minus charges minus open reservations. Grants come from the operator.</p>
        </div>
        {can(ctx.session, 'read') && <Usage />}
      </div>
      {can(ctx.session, 'keys') && <Keys ctx={ctx} />}
      {can(ctx.session, 'webhooks') && <Endpoint />}
      {can(ctx.session, 'read') && <Ledger />}
    </section>
  );
}

/** Every scope, in the server's order, with what it allows. */
const SCOPES: [Scope, string][] = [
  ['run', 'submit, cancel and delete runs and batches; upload images'],
  ['read', 'read runs, outputs, workflows, tools, the balance'],
  ['workflows', 'save and delete workflows'],
  ['webhooks', 'the webhook secret, endpoint and delivery logs'],
  ['keys', 'create, list and revoke keys'],
];

function Keys({ ctx }: { ctx: SessionContext }) {
  const keys = useLoad(() => get<{ keys: Key[] }>('/keys'), []);
  // A new key holds run and read unless chosen otherwise, never more than this session's key.
  const held = ctx.session.scopes;
  const [chosen, setChosen] = useState<Scope[]>(() => (['run', 'read'] as Scope[]).filter((s) => held.includes(s)));
  const toggle = (scope: Scope) =>
    setChosen((now) => (now.includes(scope) ? now.filter((s) => s !== scope) : [...now, scope]));
  const [shown, setShown] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState<number | null>(null);

  const create = async () => {
    setError(null);
    try {
      const made = await post<Key & { key: string }>('/keys', { scopes: chosen });
      setShown(made.key);
      setCopied(false);
      keys.reload();
    } catch (e) {
      setError(explain(e));
    }
  };

  const revoke = async (key: Key) => {
    const warning = key.current
      ? `Revoke ${key.prefix}…? This session signed in with it and will end.`
      : `Revoke ${key.prefix}…? Requests with it will get 401 at once.`;
    if (!window.confirm(warning)) return;
    setError(null);
    try {
      await del(`/keys/${key.id}`);
      if (key.current) ctx.refresh();
      else keys.reload();
    } catch (e) {
      setError(explain(e));
    }
  };

  const copy = async () => {
    if (!shown) return;
    try {
      await navigator.clipboard.writeText(shown);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };

  return (
    <div className="card">
      <div className="card-head">
        <h2>API keys</h2>
        <button type="button" onClick={create} disabled={!chosen.length}>Create key</button>
      </div>
      <fieldset className="scopes">
        <legend>A new key may</legend>
        {SCOPES.filter(([s]) => held.includes(s)).map(([scope, what]) => (
          <label key={scope} title={what}>
            <input type="checkbox" checked={chosen.includes(scope)} onChange={() => toggle(scope)} data-testid={`scope-${scope}`} />{' '}
            {scope}
          </label>
        ))}
      </fieldset>
      {shown && (
        <div className="new-key" role="status">
          <p>
            <strong>Copy this key now: it is not shown again.</strong>
          </p>
          <div className="row">
            <code data-testid="new-key">{shown}</code>
            <button type="button" onClick={copy}>{copied ? 'Copied' : 'Copy'}</button>
            <button type="button" onClick={() => setShown(null)}>Done</button>
          </div>
        </div>
      )}
      {error && <p className="error" role="alert">{error}</p>}
      <table>
        <caption className="sr-only">API keys of this account</caption>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Scopes</th>
            <th scope="col">Spend</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
            <th scope="col"><span className="sr-only">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          {keys.data?.keys.map((k) => [
            <tr key={k.id} data-testid="key-row">
              <td>
                <code>{k.prefix}…</code> {k.current && <span className="tag">this session</span>}
              </td>
              <td data-testid="key-scopes">{k.scopes.join(', ')}</td>
              <td data-testid="key-spend">
                <SpendSummary spend={k.spend} />
              </td>
              <td>{when(k.created_at)}</td>
              <td>{k.last_used ? when(k.last_used) : 'never'}</td>
              <td>{k.revoked_at ? `revoked ${when(k.revoked_at)}` : 'active'}</td>
              <td>
                {!k.revoked_at && (
                  <>
                    <button type="button" onClick={() => setEditing(editing === k.id ? null : k.id)} aria-label={`Limits of ${k.prefix}`}>
                      Limits
                    </button>{' '}
                    <button type="button" className="danger" onClick={() => revoke(k)} aria-label={`Revoke ${k.prefix}`}>
                      Revoke
                    </button>
                  </>
                )}
              </td>
            </tr>,
            editing === k.id && (
              <tr key={`${k.id}-limits`}>
                <td colSpan={7}>
                  <LimitsForm
                    spend={k.spend}
                    onSave={async (body) => {
                      setError(null);
                      try {
                        await put(`/keys/${k.id}/limits`, body);
                        setEditing(null);
                        keys.reload();
                      } catch (e) {
                        setError(explain(e));
                      }
                    }}
                  />
                </td>
              </tr>
            ),
          ])}
        </tbody>
      </table>
    </div>
  );
}

/** A limit in words: `used / limit`, or just what is used when there is none. */
const used = (n: number, limit: number | null) => (limit === null ? `${n}` : `${n} / ${limit}`);

function SpendSummary({ spend }: { spend: Spend }) {
  return (
    <span title={`Day resets ${spend.daily.resets_at} UTC, month ${spend.monthly.resets_at} UTC`}>
      today {used(spend.daily.used, spend.daily.limit)} · month {used(spend.monthly.used, spend.monthly.limit)}
      {spend.running_nodes_limit != null && ` · nodes ${spend.running_nodes ?? 0} / ${spend.running_nodes_limit}`}
    </span>
  );
}

/** A setting as the form shows it: a number, `none` (-1), or empty for the default. */
const shownSetting = (n: number | null | undefined) => (n === null || n === undefined ? '' : n < 0 ? 'none' : `${n}`);

/** What a field of the form means: empty is the default (null), `none` is -1. */
function readSetting(text: string): number | null | 'invalid' {
  const t = text.trim().toLowerCase();
  if (t === '') return null;
  if (t === 'none') return -1;
  return /^\d+$/.test(t) ? Number(t) : 'invalid';
}

function LimitsForm({ spend, onSave }: { spend: Spend; onSave: (body: Record<string, number | null>) => void }) {
  const [fields, setFields] = useState({
    daily: shownSetting(spend.settings.daily),
    monthly: shownSetting(spend.settings.monthly),
    running_nodes: shownSetting(spend.settings.running_nodes),
  });
  const [problem, setProblem] = useState<string | null>(null);
  const save = () => {
    const body: Record<string, number | null> = {};
    for (const [name, text] of Object.entries(fields)) {
      const value = readSetting(text);
      if (value === 'invalid') {
        setProblem(`${name}: a whole number, none, or empty for the operator's default`);
        return;
      }
      body[name] = value;
    }
    setProblem(null);
    onSave(body);
  };
  const field = (name: keyof typeof fields, label: string) => (
    <label>
      {label}{' '}
      <input
        value={fields[name]}
        onChange={(e) => setFields({ ...fields, [name]: e.target.value })}
        placeholder="default"
        size={8}
        data-testid={`limit-${name}`}
      />
    </label>
  );
  return (
    <form className="limits" onSubmit={(e) => (e.preventDefault(), save())}>
      {field('daily', 'Tokens per day')} {field('monthly', 'per month')} {field('running_nodes', 'Nodes at once')}{' '}
      <button type="submit">Save limits</button>
      <p className="hint">
        Empty follows the operator&apos;s default; <code>none</code> is no limit. Days and months are UTC. A key never gets
        more than the key this session signed in with.
      </p>
      {problem && <p className="error" role="alert">{problem}</p>}
    </form>
  );
}

/** The account's own webhook endpoint, where spend alerts go, and its latest deliveries. */
function Endpoint() {
  const endpoint = useLoad(() => get<WebhookEndpoint>('/v3/webhooks/endpoint'), []);
  const [url, setUrl] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const current = endpoint.data?.url ?? null;
  const shown = url ?? current ?? '';
  const change = async (request: () => Promise<WebhookEndpoint>) => {
    setError(null);
    try {
      await request();
      setUrl(null);
      endpoint.reload();
    } catch (e) {
      setError(explain(e));
    }
  };
  const deliveries = endpoint.data?.deliveries ?? [];
  return (
    <div className="card" data-testid="webhook-endpoint">
      <h2>Webhook endpoint</h2>
      <p className="hint">
        Receives <code>spend.threshold</code> when a key or the account reaches 80% and 100% of a daily or monthly
        limit, once per period, signed with the account&apos;s webhook secret.
      </p>
      {error && <p className="error" role="alert">{error}</p>}
      <form
        className="endpoint"
        onSubmit={(e) => {
          e.preventDefault();
          void change(() => put<WebhookEndpoint>('/v3/webhooks/endpoint', { url: shown }));
        }}
      >
        <label>
          URL{' '}
          <input type="url" value={shown} onChange={(e) => setUrl(e.target.value)} placeholder="https://…" data-testid="endpoint-url" />
        </label>{' '}
        <button type="submit" disabled={!shown || shown === current}>Save</button>{' '}
        {current && (
          <button type="button" onClick={() => void change(() => del<WebhookEndpoint>('/v3/webhooks/endpoint'))}>
            Remove
          </button>
        )}
      </form>
      {deliveries.length > 0 && (
        <table className="compact" data-testid="endpoint-deliveries">
          <caption>Latest deliveries</caption>
          <thead>
            <tr>
              <th scope="col">Message</th>
              <th scope="col">Queued</th>
              <th scope="col">State</th>
              <th scope="col">Attempts</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.map((d) => {
              const last = d.attempts[d.attempts.length - 1];
              return (
                <tr key={d.id}>
                  <td><code>{d.id}</code></td>
                  <td>{when(d.created_at)}</td>
                  <td>{d.state}</td>
                  <td>
                    {d.attempts.length}
                    {last && ` (last: ${last.status_code ?? last.error ?? 'no answer'})`}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}

function Usage() {
  const usage = useLoad(() => get<{ days: UsageDay[] }>('/usage?days=30'), []);
  const days = usage.data?.days ?? [];
  const max = Math.max(1, ...days.map((d) => d.tokens));
  const tools = new Map<string, number>();
  for (const d of days) for (const [t, n] of Object.entries(d.nodes)) tools.set(t, (tools.get(t) ?? 0) + n);
  const total = days.reduce((s, d) => s + d.tokens, 0);
  const W = 600;
  const H = 120;
  const bar = days.length ? W / days.length : W;
  return (
    <div className="card usage">
      <h2>Usage, last 30 days</h2>
      <svg viewBox={`0 0 ${W} ${H + 16}`} role="img" aria-label={`Tokens charged per day: ${total} in 30 days`} className="chart">
        {days.map((d, i) => {
          const h = Math.round((d.tokens / max) * H);
          return (
            <g key={d.date}>
              <rect x={i * bar + 1} y={H - h} width={Math.max(1, bar - 2)} height={h} className="bar">
                <title>{`${d.date}: ${d.tokens} tokens`}</title>
              </rect>
            </g>
          );
        })}
        <line x1="0" x2={W} y1={H} y2={H} className="axis" />
        {days.length > 0 && (
          <>
            <text x="0" y={H + 13} className="tick">{days[0].date}</text>
            <text x={W} y={H + 13} className="tick" textAnchor="end">{days[days.length - 1].date}</text>
          </>
        )}
      </svg>
      <p className="hint">{total.toLocaleString()} tokens charged.</p>
      {tools.size > 0 && (
        <table className="compact" data-testid="runs-per-tool">
          <caption>Nodes run per tool</caption>
          <tbody>
            {[...tools.entries()].sort((a, b) => b[1] - a[1]).map(([t, n]) => (
              <tr key={t}>
                <th scope="row">{t}</th>
                <td>{n}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function Ledger() {
  const [kind, setKind] = useState('');
  const [run, setRun] = useState('');
  const [pages, setPages] = useState<number[]>([]);
  const before = pages.length ? pages[pages.length - 1] : null;
  const query = new URLSearchParams({ limit: '25' });
  if (kind) query.set('kind', kind);
  if (run.trim()) query.set('run_id', run.trim());
  if (before) query.set('before', String(before));
  const ledger = useLoad(
    () => get<{ entries: LedgerEntry[]; next_before: number | null }>(`/ledger?${query}`),
    [kind, run, before],
  );
  return (
    <div className="card">
      <h2>Ledger</h2>
      <div className="filters">
        <label>
          Kind{' '}
          <select value={kind} onChange={(e) => { setKind(e.target.value); setPages([]); }}>
            <option value="">all</option>
            <option value="grant">grant</option>
            <option value="reserve">reserve</option>
            <option value="charge">charge</option>
            <option value="release">release</option>
            <option value="cache_hit">cache_hit</option>
          </select>
        </label>
        <label>
          Run{' '}
          <input value={run} placeholder="gen_… or wr_…" onChange={(e) => { setRun(e.target.value); setPages([]); }} />
        </label>
      </div>
      {ledger.error ? <p className="error" role="alert">{explain(ledger.error)}</p> : null}
      <table data-testid="ledger">
        <caption className="sr-only">Ledger lines, newest first</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Kind</th>
            <th scope="col">Tokens</th>
            <th scope="col">Run</th>
            <th scope="col">Tool or workflow</th>
          </tr>
        </thead>
        <tbody>
          {ledger.data?.entries.map((e) => (
            <tr key={e.id} data-kind={e.kind}>
              <td>{when(e.created_at)}</td>
              <td>{e.kind}</td>
              <td className="num">{ledgerAmount(e)}</td>
              <td>
                {e.run_id ? <Link to={`/runs/${e.run_id}`}>{e.run_id}</Link> : '—'}
                {e.source_run ? (
                  <>
                    {' '}(copied from <Link to={`/runs/${e.source_run}`}>{e.source_run}</Link>)
                  </>
                ) : null}
              </td>
              <td>{e.target ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="pager">
        <button type="button" disabled={!pages.length} onClick={() => setPages(pages.slice(0, -1))}>Newer</button>
        <button
          type="button"
          disabled={!ledger.data?.next_before}
          onClick={() => ledger.data?.next_before && setPages([...pages, ledger.data.next_before])}
        >
          Older
        </button>
      </div>
    </div>
  );
}

/** A ledger line's tokens as they change the balance: grants and releases add, a cache hit
 * costs nothing, the rest subtract. */
function ledgerAmount(e: LedgerEntry): string {
  if (e.kind === 'cache_hit') return '0';
  return e.kind === 'grant' || e.kind === 'release' ? `+${e.amount}` : `−${e.amount}`;
}
