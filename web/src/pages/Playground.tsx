import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { can, type SessionContext } from '../lib/session';
import { Outputs } from '../components/Outputs';
import { RunGraph, type RunNode } from '../components/RunGraph';
import { parseDescriptor, type WorkflowDoc } from '../editor/model';
import { Field, fromParam, type FieldSpec } from '../forms/Fields';
import { ApiError, explain, get, post, segment, TERMINAL, type Estimate, type ParamType, type RunStatus, type Tool, type WorkflowDescription, type WorkflowSummary } from '../lib/api';
import { useLoad, useRunFollow } from '../lib/hooks';
import { Link, navigate, queryOf } from '../lib/router';
import { outputsOf } from './RunDetail';

/** A workflow's description, its document read as the editor's model reads it. */
type Description = Omit<WorkflowDescription, 'workflow'> & { workflow: WorkflowDoc };

/** Tools whose result is an edit of their input image: shown over it. */
const EDITS = ['upscale', 'background_removal', 'reframe'];

export function Playground({ route, ctx }: { route: string; ctx: SessionContext }) {
  const q = queryOf(route);
  const toolName = q.get('tool');
  const workflowName = q.get('workflow');
  const tools = useLoad(() => get<Tool[]>('/v3/tools'), []);
  const workflows = useLoad(() => get<WorkflowSummary[]>('/v3/workflows'), []);
  const target = toolName ? `tool:${toolName}` : workflowName ? `workflow:${workflowName}` : '';

  const choose = (value: string) => {
    const [kind, ...rest] = value.split(':');
    const name = rest.join(':');
    navigate(value ? `/playground?${kind}=${encodeURIComponent(name)}` : '/playground', true);
  };

  return (
    <section className="playground">
      <h1>Playground</h1>
      <label className="target-picker">
        Run{' '}
        <select value={target} onChange={(e) => choose(e.target.value)} data-testid="target">
          <option value="">choose a tool or a workflow</option>
          <optgroup label="Tools">
            {tools.data?.map((t) => (
              <option key={t.name} value={`tool:${t.name}`}>{t.name}</option>
            ))}
          </optgroup>
          <optgroup label="Workflows">
            {workflows.data?.map((w) => (
              <option key={w.id} value={`workflow:${w.name}`}>{w.name}{w.system_workflow ? ' (template)' : ''}</option>
            ))}
          </optgroup>
        </select>
      </label>
      {toolName && tools.data && <ToolForm key={toolName} tool={tools.data.find((t) => t.name === toolName)} name={toolName} ctx={ctx} />}
      {workflowName && <WorkflowForm key={workflowName} name={workflowName} ctx={ctx} />}
    </section>
  );
}

function ToolForm({ tool, name, ctx }: { tool: Tool | undefined; name: string; ctx: SessionContext }) {
  if (!tool) return <p className="error" role="alert">No tool named {name}.</p>;
  const fields = tool.params.map((p) => fromParam(p));
  const graph: RunNode[] = [{ name: tool.name, tool: tool.name, links: {}, bypassed: false }];
  return (
    <>
      <p className="hint">{tool.description} <span className="tag">{tool.engine}</span> <span className="tag">{tool.fidelity}</span></p>
      <RunForm kind="node" target={tool.name} fields={fields} graph={graph} ctx={ctx} edit={EDITS.includes(tool.name) ? tool.primary_image : null} />
    </>
  );
}

function WorkflowForm({ name, ctx }: { name: string; ctx: SessionContext }) {
  const description = useLoad(() => get<Description>(`/v3/workflow/${segment(name)}`), [name]);
  const fields = useMemo(() => {
    const d = description.data;
    if (!d) return [];
    const list: FieldSpec[] = [];
    for (const [group, required] of [[d.inputs.mandatory, true], [d.inputs.optional, false]] as const) {
      for (const [key, text] of Object.entries(group)) {
        const parsed = parseDescriptor(text);
        const type = (parsed?.type ?? 'string') as ParamType;
        list.push({ name: key, label: key, type, required, default: parsed?.default ?? undefined });
      }
    }
    return list;
  }, [description.data]);
  if (description.error) return <p className="error" role="alert">{explain(description.error)}</p>;
  if (!description.data) return <p role="status">Loading…</p>;
  const graph: RunNode[] = description.data.workflow.nodes.map((n) => ({
    name: n.name,
    tool: n.tool,
    links: Object.fromEntries(Object.entries(n.links ?? {}).map(([p, l]) => [p, l.split('.')[0]])),
    bypassed: n.mode === 'bypassed',
  }));
  return (
    <>
      <p className="hint">
        {description.data.workflow.description} <Link to={`/editor/${segment(name)}`}>Open in editor</Link>
      </p>
      <RunForm kind="workflow" target={name} fields={fields} graph={graph} ctx={ctx} edit={null} />
    </>
  );
}

function RunForm({
  kind,
  target,
  fields,
  graph,
  ctx,
  edit,
}: {
  kind: 'node' | 'workflow';
  target: string;
  fields: FieldSpec[];
  graph: RunNode[];
  ctx: SessionContext;
  /** The image parameter an edit tool changes. */
  edit: string | null;
}) {
  const [values, setValues] = useState<Record<string, unknown>>({});
  const [estimate, setEstimate] = useState<Estimate | null>(null);
  const [estimateNote, setEstimateNote] = useState<string | null>(null);
  const [error, setError] = useState<{ text: string; field?: string } | null>(null);
  const [runId, setRunId] = useState<string | null>(null);
  const [status, setStatus] = useState<RunStatus | null>(null);
  const [busy, setBusy] = useState(false);

  const input = useMemo(() => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(values)) if (v !== undefined && v !== '') out[k] = v;
    return out;
  }, [values]);
  const body = { type: kind, target, input };

  // The price of what the form holds now, once it holds every required input (the server
  // would answer 400 MissingInputs before that).
  const missing = fields.filter((f) => f.required && input[f.name] === undefined).map((f) => f.name);
  useEffect(() => {
    if (missing.length) {
      setEstimate(null);
      setEstimateNote(`The price shows once ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} filled in.`);
      return;
    }
    const timer = window.setTimeout(() => {
      post<Estimate>('/v3/estimate', body).then(
        (e) => {
          setEstimate(e);
          setEstimateNote(null);
        },
        (e) => {
          setEstimate(null);
          setEstimateNote(explain(e));
        },
      );
    }, 250);
    return () => window.clearTimeout(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [JSON.stringify(body)]);

  const live = !!runId && (!status || !TERMINAL.includes(status.overall_status));
  useRunFollow(runId, live, (s) => {
    setStatus(s);
    if (TERMINAL.includes(s.overall_status)) ctx.refresh();
  });

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setStatus(null);
    setRunId(null);
    try {
      const handle = await post<{ id: string }>('/v3/run', body);
      setRunId(handle.id);
      ctx.refresh();
    } catch (err) {
      setError({ text: explain(err), field: err instanceof ApiError ? err.body.field : undefined });
    } finally {
      setBusy(false);
    }
  };

  const states = status?.nodes ?? (status && graph[0] ? { [graph[0].name]: { id: runId ?? '', status: status.status ?? status.overall_status, output: status.output ?? [], error: status.error, model_name: target, progress: status.progress } } : undefined);
  const before = edit && typeof values[edit] === 'string' ? (values[edit] as string) : null;

  return (
    <div className="run-form">
      <form onSubmit={submit} aria-label={`Run ${target}`}>
        {fields.map((f) => (
          <Field key={f.name} spec={f} value={values[f.name]} onChange={(v) => setValues((old) => ({ ...old, [f.name]: v }))} error={error?.field === f.name ? error.text : null} />
        ))}
        <div className="price" data-testid="price" aria-live="polite">
          {estimate ? (
            <>Costs <strong>{estimate.tokens}</strong> tokens; balance {estimate.balance}.</>
          ) : (
            estimateNote && <span className="hint">{estimateNote}</span>
          )}
        </div>
        <button type="submit" disabled={busy || !can(ctx.session, 'run')} title={can(ctx.session, 'run') ? undefined : "This session's key does not hold the run scope"}>
          {busy ? 'Starting…' : 'Run'}
        </button>
        {error && !error.field && <p className="error" role="alert" data-testid="run-refused">{error.text}</p>}
      </form>
      <div className="run-view">
        {runId && (
          <p>
            Run <Link to={`/runs/${runId}`}>{runId}</Link>:{' '}
            <span className={`pill status-${status?.overall_status ?? 'queued'}`} data-testid="playground-status">{status?.overall_status ?? 'queued'}</span>
          </p>
        )}
        {status?.error && <p className="error" role="alert">{status.error.node ? `${status.error.node}: ` : ''}{status.error.message}</p>}
        {runId && <RunGraph nodes={graph} states={states} />}
        {status && <Outputs outputs={outputsOf(status)} expiresAt={status.expires_at} before={before} />}
      </div>
    </div>
  );
}
