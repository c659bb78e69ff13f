import { useState } from 'react';
import { explain, get, type RunList } from '../lib/api';
import { when } from '../lib/format';
import { useInterval, useLoad } from '../lib/hooks';
import { Link, navigate, queryOf } from '../lib/router';

const STATES = ['queued', 'running', 'succeeded', 'failed', 'canceled'];

export function Runs({ route }: { route: string }) {
  const q = queryOf(route);
  const status = q.get('status') ?? '';
  const target = q.get('target') ?? '';
  const [pages, setPages] = useState<number[]>([]);
  const before = pages.length ? pages[pages.length - 1] : null;
  const params = new URLSearchParams({ limit: '25' });
  if (status) params.set('status', status);
  if (target) params.set('target', target);
  if (before) params.set('before', String(before));
  const runs = useLoad(() => get<RunList>(`/v3/runs?${params}`), [status, target, before]);
  const unfinished = runs.data?.runs.some((r) => r.overall_status === 'queued' || r.overall_status === 'running') ?? false;
  useInterval(runs.reload, 2000, unfinished);

  const filter = (key: string, value: string) => {
    const next = new URLSearchParams(q);
    if (value) next.set(key, value);
    else next.delete(key);
    setPages([]);
    const text = next.toString();
    navigate(`/runs${text ? `?${text}` : ''}`, true);
  };

  return (
    <section>
      <h1>Runs</h1>
      <div className="filters">
        <label>
          State{' '}
          <select value={status} onChange={(e) => filter('status', e.target.value)}>
            <option value="">all</option>
            {STATES.map((s) => (
              <option key={s} value={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Tool or workflow{' '}
          <input defaultValue={target} key={target} placeholder="upscale" onKeyDown={(e) => e.key === 'Enter' && filter('target', (e.target as HTMLInputElement).value.trim())} onBlur={(e) => e.target.value.trim() !== target && filter('target', e.target.value.trim())} />
        </label>
      </div>
      {runs.error ? <p className="error" role="alert">{explain(runs.error)}</p> : null}
      <table data-testid="runs">
        <caption className="sr-only">Runs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">Kind</th>
            <th scope="col">Tool or workflow</th>
            <th scope="col">State</th>
            <th scope="col">Started</th>
          </tr>
        </thead>
        <tbody>
          {runs.data?.runs.map((r) => (
            <tr key={r.id} data-testid="run-row" data-status={r.overall_status}>
              <td><Link to={`/runs/${r.id}`}>{r.id}</Link></td>
              <td>{r.type}</td>
              <td>{r.target}</td>
              <td><span className={`pill status-${r.overall_status}`}>{r.overall_status}</span></td>
              <td>{when(r.created_at)}</td>
            </tr>
          ))}
          {runs.data && !runs.data.runs.length && (
            <tr>
              <td colSpan={5}>No runs{status || target ? ' match these filters' : ' yet: start one in the playground'}.</td>
            </tr>
          )}
        </tbody>
      </table>
      <div className="pager">
        <button type="button" disabled={!pages.length} onClick={() => setPages(pages.slice(0, -1))}>Newer</button>
        <button type="button" disabled={!runs.data?.next_before} onClick={() => runs.data?.next_before && setPages([...pages, runs.data.next_before])}>Older</button>
      </div>
    </section>
  );
}
