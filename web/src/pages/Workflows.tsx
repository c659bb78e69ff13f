import { useState } from 'react';
import { del, explain, get, segment, type WorkflowSummary } from '../lib/api';
import { when } from '../lib/format';
import { useLoad } from '../lib/hooks';
import { Link, navigate } from '../lib/router';
import { can, type SessionContext } from '../lib/session';

export function Workflows({ ctx }: { ctx: SessionContext }) {
  const mayWrite = can(ctx.session, 'workflows');
  const list = useLoad(() => get<WorkflowSummary[]>('/v3/workflows'), []);
  const [error, setError] = useState<string | null>(null);
  const remove = async (name: string) => {
    if (!window.confirm(`Delete workflow “${name}”? Runs made with it keep their results.`)) return;
    try {
      await del(`/v3/workflow/${segment(name)}`);
      list.reload();
    } catch (e) {
      setError(explain(e));
    }
  };
  const own = list.data?.filter((w) => !w.system_workflow) ?? [];
  const templates = list.data?.filter((w) => w.system_workflow) ?? [];
  return (
    <section>
      <div className="card-head">
        <h1>Workflows</h1>
        <button type="button" onClick={() => navigate('/editor')}>New workflow</button>
      </div>
      {error && <p className="error" role="alert">{error}</p>}
      <h2>Yours</h2>
      {own.length ? (
        <ul className="workflow-list" data-testid="own-workflows">
          {own.map((w) => (
            <li key={w.id}>
              <Link to={`/editor/${segment(w.name)}`} className="name">{w.name}</Link>
              <span className="hint">saved {when(w.created_at)}</span>
              <Link to={`/playground?workflow=${encodeURIComponent(w.name)}`}>Run</Link>
              {mayWrite && (
                <button type="button" className="danger" onClick={() => remove(w.name)} aria-label={`Delete ${w.name}`}>Delete</button>
              )}
            </li>
          ))}
        </ul>
      ) : (
        <p className="hint">None yet: start from a template or an empty canvas.</p>
      )}
      <h2>Templates</h2>
      <ul className="workflow-list" data-testid="templates">
        {templates.map((w) => (
          <li key={w.id}>
            <Link to={`/editor/${segment(w.name)}`} className="name">{w.name}</Link>
            <span className="tag">read-only</span>
            <Link to={`/editor?from=${encodeURIComponent(w.name)}`}>Duplicate to my workflows</Link>
            <Link to={`/playground?workflow=${encodeURIComponent(w.name)}`}>Run</Link>
          </li>
        ))}
      </ul>
    </section>
  );
}
