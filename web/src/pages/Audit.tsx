import { useState } from 'react';
import { explain, get, type AuditEntry } from '../lib/api';
import { when } from '../lib/format';
import { useLoad } from '../lib/hooks';
import { Link } from '../lib/router';

/** The kinds of change the log records, for the filter (a prefix of the action). */
const ACTIONS: [string, string][] = [
  ['', 'everything'],
  ['key.', 'keys'],
  ['session.', 'sign-ins and sign-outs'],
  ['workflow.', 'workflows'],
  ['webhook_secret.', 'the webhook secret'],
  ['run.', 'runs deleted'],
  ['batch.', 'batches deleted'],
  ['account.', 'the account (operator)'],
  ['tokens.', 'grants (operator)'],
];

/** The account's audit log (`GET /console/api/v3/audit`), newest first, 25 a page. */
export function Audit() {
  const [action, setAction] = useState('');
  const [pages, setPages] = useState<number[]>([]);
  const before = pages.length ? pages[pages.length - 1] : null;
  const query = new URLSearchParams({ limit: '25' });
  if (action) query.set('action', action);
  if (before) query.set('before', String(before));
  const log = useLoad(() => get<{ entries: AuditEntry[]; next_before: number | null }>(`/v3/audit?${query}`), [action, before]);
  const entries = log.data?.entries ?? [];

  const download = () => {
    const lines = entries.map((e) => JSON.stringify(e)).join('\n') + '\n';
    const url = URL.createObjectURL(new Blob([lines], { type: 'application/x-ndjson' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = `audit-${entries[entries.length - 1]?.id ?? 0}-${entries[0]?.id ?? 0}.jsonl`;
    a.click();
    URL.revokeObjectURL(url);
  };

  return (
    <section>
      <h1>Audit log</h1>
      <p className="hint">
        Every change to this account&apos;s keys, limits, sign-ins, workflows, webhook secret and deletions: who made it,
        from where, and the hash that chains it to the entry before. The operator verifies the chain with{' '}
        <code>atelier admin audit verify</code>.
      </p>
      <div className="filters">
        <label>
          Show{' '}
          <select
            value={action}
            onChange={(e) => {
              setAction(e.target.value);
              setPages([]);
            }}
            data-testid="audit-action"
          >
            {ACTIONS.map(([prefix, label]) => (
              <option key={prefix} value={prefix}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={download} disabled={!entries.length}>
          Download this page (JSON Lines)
        </button>
      </div>
      {log.error ? <p className="error" role="alert">{explain(log.error)}</p> : null}
      <table data-testid="audit">
        <caption className="sr-only">Audit entries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col">What changed</th>
            <th scope="col">From</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr key={e.id} data-action={e.action}>
              <td className="num" title={`hash ${e.hash}\nprevious ${e.prev_hash}`}>{e.id}</td>
              <td>{when(e.at)}</td>
              <td><code>{e.actor}</code></td>
              <td>{e.action}</td>
              <td>{target(e)}</td>
              <td><code>{e.summary === null ? '—' : JSON.stringify(e.summary)}</code></td>
              <td>{e.address ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {log.data && !entries.length ? <p className="hint">Nothing recorded yet.</p> : null}
      <div className="pager">
        <button type="button" disabled={!pages.length} onClick={() => setPages(pages.slice(0, -1))}>Newer</button>
        <button
          type="button"
          disabled={!log.data?.next_before}
          onClick={() => log.data?.next_before && setPages([...pages, log.data.next_before])}
        >
          Older
        </button>
      </div>
    </section>
  );
}

/** A run's or batch's target links to it; the rest is shown as it is. */
function target(e: AuditEntry) {
  if (!e.target) return '—';
  if (e.action === 'batch.deleted') return <Link to={`/batches/${e.target}`}>{e.target}</Link>;
  if (e.action === 'run.deleted') return <Link to={`/runs/${e.target}`}>{e.target}</Link>;
  return <code>{e.target}</code>;
}
