import { useState } from 'react';
import { can, type SessionContext } from '../lib/session';
import { Outputs } from '../components/Outputs';
import { RunGraph } from '../components/RunGraph';
import { explain, get, post, TERMINAL, type RunDetail as Detail, type RunStatus, type WebhookDelivery } from '../lib/api';
import { expiresIn, when } from '../lib/format';
import { useLoad, useRunFollow } from '../lib/hooks';
import { navigate } from '../lib/router';

/** The outputs of a status, by name: a workflow's named outputs, or a node run's list. */
export function outputsOf(status: RunStatus): [string, string[]][] {
  if (status.outputs) {
    return Object.entries(status.outputs)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [k, Array.isArray(v) ? v : [v as string]]);
  }
  return status.output && status.output.length ? [['output', status.output]] : [];
}

/** Whether the run, or one of its nodes, is queued waiting for a model server that is down. */
export function waitingForEngine(status: RunStatus): boolean {
  return status.waiting_for === 'engine' || Object.values(status.nodes ?? {}).some((n) => n.waiting_for === 'engine');
}

export function RunDetail({ id, ctx }: { id: string; ctx: SessionContext }) {
  const detail = useLoad(() => get<Detail>(`/runs/${encodeURIComponent(id)}`), [id]);
  const [error, setError] = useState<string | null>(null);
  const status = detail.data?.status;
  const live = !!status && !TERMINAL.includes(status.overall_status);
  useRunFollow(id, live, (s) => {
    detail.setData((d) => (d ? { ...d, status: s } : d));
    if (TERMINAL.includes(s.overall_status)) ctx.refresh();
  });

  if (detail.error) return <section><h1>Run {id}</h1><p className="error" role="alert">{explain(detail.error)}</p></section>;
  if (!detail.data || !status) return <p role="status">Loading…</p>;
  const d = detail.data;

  const cancel = async () => {
    setError(null);
    try {
      const s = await post<RunStatus>(`/v3/cancel/${encodeURIComponent(id)}`);
      detail.setData({ ...d, status: s });
      ctx.refresh();
    } catch (e) {
      setError(explain(e));
    }
  };
  const rerun = async () => {
    setError(null);
    try {
      const handle = await post<{ id: string }>(`/runs/${encodeURIComponent(id)}/rerun`);
      ctx.refresh();
      navigate(`/runs/${handle.id}`);
    } catch (e) {
      setError(explain(e));
    }
  };

  const graphNodes = d.nodes.map((n) => ({ name: n.name, tool: n.tool, links: n.links, bypassed: n.bypassed }));
  const states = status.nodes ?? (d.nodes[0] ? { [d.nodes[0].name]: { id: d.id, status: status.status ?? status.overall_status, output: status.output ?? [], error: status.error, model_name: d.target, progress: status.progress } } : undefined);

  return (
    <section className="run-detail">
      <h1>
        Run <code>{d.id}</code>
      </h1>
      <dl className="facts">
        <dt>{d.type === 'workflow' ? 'Workflow' : 'Tool'}</dt>
        <dd>{d.target}</dd>
        <dt>State</dt>
        <dd><span className={`pill status-${status.overall_status}`} data-testid="run-status">{status.overall_status}</span>{status.queue_position !== undefined && ` (${status.queue_position} ahead in the queue)`}{waitingForEngine(status) && <span data-testid="run-waiting"> waiting for its model server, which is down; it runs when the server is back</span>}</dd>
        <dt>Started</dt>
        <dd>{when(status.created_at)}</dd>
        <dt>Finished</dt>
        <dd>{when(status.finished_at)}</dd>
        <dt>Tokens</dt>
        <dd>{status.tokens}</dd>
        {status.expires_at && (<><dt>Outputs</dt><dd>{expiresIn(status.expires_at)}</dd></>)}
      </dl>
      <div className="row">
        {live && can(ctx.session, 'run') && <button type="button" className="danger" onClick={cancel}>Cancel run</button>}
        {d.rerun && can(ctx.session, 'run') && <button type="button" onClick={rerun}>Run again with the same input</button>}
        {d.type === 'workflow' && <button type="button" onClick={() => navigate(`/editor/${encodeURIComponent(d.target)}`)}>Open workflow in editor</button>}
      </div>
      {error && <p className="error" role="alert">{error}</p>}
      {status.error && (
        <p className="error" role="alert" data-testid="run-error">
          {status.error.node ? `${status.error.node}: ` : ''}
          {status.error.message} ({status.error.name})
        </p>
      )}
      <RunGraph nodes={graphNodes} states={states} />
      <Outputs outputs={outputsOf(status)} expiresAt={status.expires_at} />
      {can(ctx.session, 'webhooks') && <Deliveries id={id} finished={!live} />}
    </section>
  );
}

/** The run's webhook deliveries, each with its attempts, and *Send again* for those that ended. */
function Deliveries({ id, finished }: { id: string; finished: boolean }) {
  const path = `/v3/runs/${encodeURIComponent(id)}/webhooks`;
  const list = useLoad(() => get<{ deliveries: WebhookDelivery[] }>(path), [id, finished]);
  const [error, setError] = useState<string | null>(null);
  const deliveries = list.data?.deliveries ?? [];
  if (!deliveries.length) return null;
  const replay = async (delivery: WebhookDelivery) => {
    setError(null);
    try {
      await post<WebhookDelivery>(`${path}/${encodeURIComponent(delivery.id)}/replay`);
      list.reload();
    } catch (e) {
      setError(explain(e));
    }
  };
  return (
    <div className="card" data-testid="deliveries">
      <h2>Webhook deliveries</h2>
      {error && <p className="error" role="alert">{error}</p>}
      <table>
        <caption className="sr-only">Webhook deliveries of this run</caption>
        <thead>
          <tr>
            <th scope="col">Message</th>
            <th scope="col">Event</th>
            <th scope="col">State</th>
            <th scope="col">Attempts</th>
            <th scope="col"><span className="sr-only">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          {deliveries.map((w) => {
            const last = w.attempts[w.attempts.length - 1];
            return (
              <tr key={w.id} data-testid="delivery-row">
                <td><code>{w.id}</code></td>
                <td>{w.event}{w.node ? ` (${w.node})` : ''}</td>
                <td>{w.state}</td>
                <td>
                  {w.attempts.length}
                  {last && ` (last: ${last.status_code ?? last.error ?? 'no answer'})`}
                  {w.replays > 0 && `, replayed ${w.replays}×`}
                </td>
                <td>
                  {w.state !== 'pending' && (
                    <button type="button" onClick={() => replay(w)} aria-label={`Send ${w.id} again`}>Send again</button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
