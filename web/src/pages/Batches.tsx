import { useState } from 'react';
import { can, type SessionContext } from '../lib/session';
import { explain, get, post, type Batch, type BatchItemList, type BatchList } from '../lib/api';
import { when } from '../lib/format';
import { useBatchFollow, useInterval, useLoad } from '../lib/hooks';
import { Link } from '../lib/router';

const ITEM_STATES = ['pending', 'queued', 'running', 'succeeded', 'failed', 'canceled'] as const;
const PAGE = 50;

/** The account's batches, newest first. */
export function Batches() {
  const [pages, setPages] = useState<number[]>([]);
  const before = pages.length ? pages[pages.length - 1] : null;
  const params = new URLSearchParams({ limit: '25' });
  if (before) params.set('before', String(before));
  const batches = useLoad(() => get<BatchList>(`/v3/batches?${params}`), [before]);
  const running = batches.data?.batches.some((b) => b.status === 'running') ?? false;
  useInterval(batches.reload, 3000, running);

  return (
    <section>
      <h1>Batches</h1>
      <p className="hint">
        A batch runs a tool or a saved workflow once per item of a catalogue (<code>POST /api/v3/batches</code>, or{' '}
        <code>atelier batch</code>).
      </p>
      {batches.error ? <p className="error" role="alert">{explain(batches.error)}</p> : null}
      <table data-testid="batches">
        <caption className="sr-only">Batches, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Batch</th>
            <th scope="col">Tool or workflow</th>
            <th scope="col">Items</th>
            <th scope="col">State</th>
            <th scope="col">Started</th>
            <th scope="col">Ended</th>
          </tr>
        </thead>
        <tbody>
          {batches.data?.batches.map((b) => (
            <tr key={b.id} data-testid="batch-row" data-status={b.status}>
              <td><Link to={`/batches/${b.id}`}>{b.id}</Link></td>
              <td>{b.target}</td>
              <td>{b.total.toLocaleString()}</td>
              <td><span className={`pill status-${b.status}`}>{b.status}</span></td>
              <td>{when(b.created_at)}</td>
              <td>{when(b.finished_at)}</td>
            </tr>
          ))}
          {batches.data && !batches.data.batches.length && (
            <tr>
              <td colSpan={6}>No batches yet.</td>
            </tr>
          )}
        </tbody>
      </table>
      <div className="pager">
        <button type="button" disabled={!pages.length} onClick={() => setPages(pages.slice(0, -1))}>Newer</button>
        <button type="button" disabled={!batches.data?.next_before} onClick={() => batches.data?.next_before && setPages([...pages, batches.data.next_before])}>Older</button>
      </div>
    </section>
  );
}

/** One batch: its progress live, its items by state with their errors, retry, cancel and the downloads. */
export function BatchDetail({ id, ctx }: { id: string; ctx: SessionContext }) {
  const path = `/v3/batches/${encodeURIComponent(id)}`;
  const batch = useLoad(() => get<Batch>(path), [id]);
  const [filter, setFilter] = useState<string>('failed');
  const [pages, setPages] = useState<number[]>([]);
  const after = pages.length ? pages[pages.length - 1] : null;
  const itemParams = new URLSearchParams({ limit: String(PAGE) });
  if (filter) itemParams.set('status', filter);
  if (after !== null) itemParams.set('after', String(after));
  const counts = batch.data?.items;
  // The items are read again whenever the counts change.
  const countsKey = counts ? ITEM_STATES.map((s) => counts[s]).join('.') : '';
  const items = useLoad(() => get<BatchItemList>(`${path}/items?${itemParams}`), [id, filter, after, countsKey]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const running = batch.data?.status === 'running';
  useBatchFollow(id, running, (b) => {
    batch.setData(b);
    if (b.status !== 'running') ctx.refresh();
  });

  if (batch.error) return <section><h1>Batch {id}</h1><p className="error" role="alert">{explain(batch.error)}</p></section>;
  if (!batch.data || !counts) return <p role="status">Loading…</p>;
  const b = batch.data;

  const act = async (what: 'retry' | 'cancel') => {
    setError(null);
    setBusy(true);
    try {
      batch.setData(await post<Batch>(`${path}/${what}`));
      ctx.refresh();
    } catch (e) {
      setError(explain(e));
    } finally {
      setBusy(false);
    }
  };
  const choose = (state: string) => {
    setFilter(state);
    setPages([]);
  };
  const percent = Math.round(b.progress * 100);

  return (
    <section className="batch-detail">
      <h1>
        Batch <code>{b.id}</code>
      </h1>
      <dl className="facts">
        <dt>{b.type === 'workflow' ? 'Workflow' : 'Tool'}</dt>
        <dd>{b.target}</dd>
        <dt>State</dt>
        <dd><span className={`pill status-${b.status}`} data-testid="batch-status">{b.status}</span> <span className="hint">({b.priority} lane)</span></dd>
        <dt>Progress</dt>
        <dd>
          <progress max={100} value={percent} aria-label="Items ended" /> <span data-testid="batch-progress">{percent}%</span> of {counts.total.toLocaleString()} items
        </dd>
        <dt>Tokens</dt>
        <dd data-testid="batch-tokens">{b.tokens.charged.toLocaleString()} charged, {b.tokens.reserved.toLocaleString()} held, {b.tokens.price.toLocaleString()} reserved in all</dd>
        <dt>Started</dt>
        <dd>{when(b.created_at)}</dd>
        <dt>Ended</dt>
        <dd>{when(b.finished_at)}</dd>
      </dl>
      <div className="filters" role="group" aria-label="Items by state">
        <button type="button" aria-pressed={filter === ''} onClick={() => choose('')}>
          all {counts.total.toLocaleString()}
        </button>
        {ITEM_STATES.map((s) => (
          <button key={s} type="button" aria-pressed={filter === s} data-testid={`count-${s}`} onClick={() => choose(s)}>
            {s} {counts[s].toLocaleString()}
          </button>
        ))}
      </div>
      <div className="row">
        {counts.failed > 0 && b.status !== 'canceled' && can(ctx.session, 'run') && (
          <button type="button" disabled={busy} onClick={() => act('retry')}>Retry {counts.failed.toLocaleString()} failed</button>
        )}
        {running && can(ctx.session, 'run') && <button type="button" className="danger" disabled={busy} onClick={() => act('cancel')}>Cancel batch</button>}
        <a className="button" href={`/console/api${path}/results.jsonl`} download={`${b.id}.jsonl`}>Download results (JSON lines)</a>
        <a className="button" href={`/console/api${path}/results.zip`} download={`${b.id}.zip`}>Download outputs (ZIP)</a>
      </div>
      {error && <p className="error" role="alert">{error}</p>}
      {items.error ? <p className="error" role="alert">{explain(items.error)}</p> : null}
      <table data-testid="batch-items">
        <caption>{filter ? `Items ${filter}` : 'Every item'}</caption>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Ref</th>
            <th scope="col">State</th>
            <th scope="col">Run</th>
            <th scope="col">Earlier runs</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {items.data?.items.map((item) => (
            <tr key={item.index} data-testid="batch-item" data-status={item.status}>
              <td>{item.index}</td>
              <td>{item.ref ?? '—'}</td>
              <td><span className={`pill status-${item.status}`}>{item.status}</span></td>
              <td>{item.run_id ? <Link to={`/runs/${item.run_id}`}>{item.run_id}</Link> : '—'}</td>
              <td>{item.attempts.length ? item.attempts.map((run) => <Link key={run} to={`/runs/${run}`}>{run}</Link>) : '—'}</td>
              <td className="item-error">{item.error ? `${item.error.message} (${item.error.name})` : ''}</td>
            </tr>
          ))}
          {items.data && !items.data.items.length && (
            <tr>
              <td colSpan={6}>No items {filter ? `are ${filter}` : ''}.</td>
            </tr>
          )}
        </tbody>
      </table>
      <div className="pager">
        <button type="button" disabled={!pages.length} onClick={() => setPages(pages.slice(0, -1))}>Previous</button>
        <button type="button" disabled={items.data?.next_after == null} onClick={() => items.data?.next_after != null && setPages([...pages, items.data.next_after])}>Next</button>
      </div>
    </section>
  );
}
