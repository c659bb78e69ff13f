// The workflow editor: a React Flow canvas over the model of editor/model.ts, a palette of
// tools, an inspector for the selected node, and the workflow's own panel (discovery preview,
// price, snippets, JSON). Every problem the service finds is shown on its node at once.

import {
  Background,
  Controls,
  MiniMap,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  type Connection as RFConnection,
  type Edge,
  type Node,
} from '@xyflow/react';
import { useCallback, useEffect, useMemo, useRef, useState, type DragEvent } from 'react';
import { can, type SessionContext } from '../lib/session';
import { autoLayout } from '../editor/layout';
import {
  IN_HANDLE,
  OUTPUT_HANDLE,
  VALUE_HANDLE,
  defaultNodeName,
  edgeId,
  fromDocument,
  locate,
  newId,
  refuseConnection,
  toDocument,
  uniqueName,
  type Graph,
  type GraphEdge,
  type GraphNode,
  type WorkflowDoc,
} from '../editor/model';
import { CanvasContext, nodeTypes, type CanvasInfo } from '../editor/nodes';
import { NodeInspector } from '../editor/Inspector';
import { Palette } from '../editor/Palette';
import { WorkflowPanel } from '../editor/WorkflowPanel';
import { useShortcuts } from '../editor/shortcuts';
import { EMPTY, useGraph } from '../editor/useGraph';
import {
  ApiError,
  explain,
  get,
  post,
  put,
  segment,
  type ParamType,
  type Tool,
  type WorkflowValidation as Validation,
  type WorkflowSummary,
} from '../lib/api';
import { useLoad } from '../lib/hooks';
import { Link, navigate, queryOf } from '../lib/router';

export function Editor(props: { name: string | null; route: string; ctx: SessionContext }) {
  return (
    <ReactFlowProvider>
      <EditorInner {...props} />
    </ReactFlowProvider>
  );
}

function EditorInner({ name, route, ctx }: { name: string | null; route: string; ctx: SessionContext }) {
  const mayWrite = can(ctx.session, 'workflows');
  const from = queryOf(route).get('from');
  const source = name ?? from;
  const tools = useLoad(() => get<Tool[]>('/v3/tools'), []);
  const toolMap = useMemo(() => new Map((tools.data ?? []).map((t) => [t.name, t])), [tools.data]);
  const list = useLoad(() => get<WorkflowSummary[]>('/v3/workflows'), [name]);
  const isTemplate = !!name && !!list.data?.some((w) => w.name === name && w.system_workflow);

  const { graph, act, reset, undo, redo, canUndo, canRedo, record, onNodesChange, onEdgesChange, beforeDelete, copy, paste, toggleBypass } =
    useGraph();
  const [description, setDescription] = useState('');
  const [loadError, setLoadError] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [validation, setValidation] = useState<Validation | null>(null);
  const [notices, setNotices] = useState<Map<string, string>>(new Map());
  const [message, setMessage] = useState<{ text: string; error?: boolean } | null>(null);
  const [saveAs, setSaveAs] = useState(name && !from ? name : from ? `${from} copy` : '');
  /** The name just saved under: opening it is not a reload (the canvas and its undo stay). */
  const savedAs = useRef<string | null>(null);
  const flow = useReactFlow();
  const wrapper = useRef<HTMLDivElement>(null);

  const paramCount = useCallback((n: GraphNode) => (n.data.kind === 'tool' ? toolMap.get(n.data.tool)?.params.length ?? 1 : 1), [toolMap]);
  const place = useCallback((g: Graph) => autoLayout(g, paramCount), [paramCount]);

  // Load the workflow (or the template to copy) once the tools are known.
  useEffect(() => {
    if (!tools.data) return;
    if (source && savedAs.current === source) {
      savedAs.current = null;
      return;
    }
    setLoaded(false);
    if (!source) {
      reset(EMPTY);
      setDescription('');
      setLoaded(true);
      return;
    }
    get<{ workflow: WorkflowDoc }>(`/v3/workflow/${segment(source)}`).then(
      (d) => {
        reset(fromDocument(d.workflow, place));
        setDescription(d.workflow.description ?? '');
        setLoaded(true);
        setLoadError(null);
        window.setTimeout(() => flow.fitView({ padding: 0.2 }), 50);
      },
      (e) => setLoadError(explain(e)),
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [source, tools.data]);

  const doc = useMemo(() => toDocument(graph, { description }), [graph, description]);
  const targetName = (saveAs || name || 'untitled').trim();

  // Every problem, from the service, shortly after each change.
  useEffect(() => {
    if (!loaded) return;
    const timer = window.setTimeout(() => {
      if (!graph.nodes.length) {
        setValidation(null);
        return;
      }
      post<Validation>(`/v3/workflows/validate?name=${encodeURIComponent(targetName || 'untitled')}`, doc).then(setValidation, (e) =>
        setValidation({ valid: false, errors: [{ field: null, reason: explain(e) }], description: null, estimate: null }),
      );
    }, 300);
    return () => window.clearTimeout(timer);
  }, [doc, loaded, targetName, graph.nodes.length]);

  const issues = useMemo(() => {
    const map: CanvasInfo['issues'] = new Map();
    const general: string[] = [];
    for (const e of validation?.errors ?? []) {
      const { id, param } = locate(graph, e.field);
      if (!id) {
        general.push(e.field ? `${e.field}: ${e.reason}` : e.reason);
        continue;
      }
      const entry = map.get(id) ?? { node: [], params: new Map<string, string>() };
      if (param) entry.params.set(param, e.reason);
      else entry.node.push(e.reason);
      map.set(id, entry);
    }
    return { map, general };
  }, [validation, graph]);

  const fed = useMemo(() => {
    const map = new Map<string, Set<string>>();
    for (const e of graph.edges) map.set(e.target, new Set([...(map.get(e.target) ?? []), e.targetHandle]));
    return map;
  }, [graph.edges]);

  const info: CanvasInfo = { tools: toolMap, issues: issues.map, notices, fed };
  const problems = (validation?.errors.length ?? 0) > 0;

  const notify = (id: string, text: string | null) => {
    setNotices((old) => {
      const next = new Map(old);
      if (text) next.set(id, text);
      else next.delete(id);
      return next;
    });
  };

  const onConnect = useCallback(
    (c: RFConnection) => {
      const why = refuseConnection(graph, toolMap, c);
      if (why) {
        notify(c.target, why);
        window.setTimeout(() => notify(c.target, null), 6000);
        return;
      }
      notify(c.target, null);
      const sourceNode = graph.nodes.find((n) => n.id === c.source)!;
      const handle = c.targetHandle ?? IN_HANDLE;
      const edge: GraphEdge = {
        id: edgeId(c.source, c.target, handle),
        source: c.source,
        sourceHandle: sourceNode.data.kind === 'variable' ? VALUE_HANDLE : OUTPUT_HANDLE,
        target: c.target,
        targetHandle: handle,
      };
      act((g) => ({
        ...g,
        // A linked parameter keeps no value of its own.
        nodes: g.nodes.map((n) => {
          if (n.id !== c.target || n.data.kind !== 'tool' || !(handle in n.data.params)) return n;
          const params = { ...n.data.params };
          delete params[handle];
          return { ...n, data: { ...n.data, params } };
        }),
        edges: [...g.edges, edge],
      }));
    },
    [graph, toolMap, act],
  );

  const center = (): { x: number; y: number } => {
    const box = wrapper.current?.getBoundingClientRect();
    if (!box) return { x: 0, y: 0 };
    return flow.screenToFlowPosition({ x: box.left + box.width / 2, y: box.top + box.height / 3 });
  };

  const addTool = (tool: string, at?: { x: number; y: number }) => {
    act((g) => {
      const name = uniqueName(defaultNodeName(tool), g.nodes.map((n) => n.data.name));
      const node: GraphNode = { id: newId('n'), type: 'tool', position: at ?? center(), data: { kind: 'tool', name, tool, params: {}, bypassed: false } };
      return { ...g, nodes: [...g.nodes.map((n) => ({ ...n, selected: false })), { ...node, selected: true }] };
    });
  };
  const addVariable = (type: ParamType) => {
    act((g) => {
      const name = uniqueName(type === 'image' ? 'image' : 'input', g.nodes.map((n) => n.data.name));
      const p = center();
      return { ...g, nodes: [...g.nodes.map((n) => ({ ...n, selected: false })), { id: newId('v'), type: 'variable', position: { x: p.x - 260, y: p.y }, selected: true, data: { kind: 'variable', name, type } }] };
    });
  };
  const addOutput = () => {
    act((g) => {
      const name = uniqueName('output', g.nodes.filter((n) => n.data.kind === 'output').map((n) => n.data.name));
      const p = center();
      return { ...g, nodes: [...g.nodes.map((n) => ({ ...n, selected: false })), { id: newId('o'), type: 'output', position: { x: p.x + 300, y: p.y }, selected: true, data: { kind: 'output', name } }] };
    });
  };

  const selected = graph.nodes.filter((n) => n.selected);
  const update = (id: string, change: (n: GraphNode) => GraphNode) => act((g) => ({ ...g, nodes: g.nodes.map((n) => (n.id === id ? change(n) : n)) }));

  const fit = () => flow.fitView({ padding: 0.2 });
  const layout = () => {
    act((g) => autoLayout(g, paramCount));
    window.setTimeout(fit, 50);
  };

  const save = useCallback(async () => {
    const target = targetName;
    if (!target) {
      setMessage({ text: 'Give the workflow a name first.', error: true });
      return;
    }
    if (problems) {
      setMessage({ text: 'Fix the problems marked on the canvas first.', error: true });
      return;
    }
    if (target !== name && list.data?.some((w) => w.name === target && !w.system_workflow) && !window.confirm(`Replace your workflow “${target}”?`)) return;
    try {
      await put(`/v3/workflow/${segment(target)}`, toDocument(graph, { name: target, description }));
      setMessage({ text: `Saved as “${target}”.` });
      if (target !== name) {
        savedAs.current = target;
        navigate(`/editor/${segment(target)}`, true);
      }
      list.reload();
    } catch (e) {
      setMessage({ text: explain(e), error: true });
      if (e instanceof ApiError && e.body.field) {
        setValidation((v) => ({ valid: false, errors: [{ field: e.body.field ?? null, reason: e.body.reason ?? e.body.message }], description: null, estimate: v?.estimate ?? null }));
      }
    }
  }, [targetName, problems, name, list, graph, description]);

  useShortcuts({
    undo,
    redo,
    copy: () => {
      const n = copy();
      if (n) setMessage({ text: `Copied ${n} node${n > 1 ? 's' : ''}.` });
    },
    paste,
    bypass: toggleBypass,
    save: () => void save(),
    fit,
    layout,
  });

  const onDrop = (e: DragEvent) => {
    const tool = e.dataTransfer.getData('application/x-atelier-tool');
    if (!tool) return;
    e.preventDefault();
    addTool(tool, flow.screenToFlowPosition({ x: e.clientX, y: e.clientY }));
  };

  if (loadError) return <section><h1>Editor</h1><p className="error" role="alert">{loadError}</p></section>;

  return (
    <CanvasContext.Provider value={info}>
      <div className="editor">
        <div className="editor-bar" role="toolbar" aria-label="Workflow">
          <label>
            Name{' '}
            <input value={saveAs} onChange={(e) => setSaveAs(e.target.value)} placeholder="My workflow" data-testid="workflow-name" aria-describedby="name-help" />
          </label>
          <span id="name-help" className="sr-only">Any name up to 100 characters, without a slash</span>
          <button type="button" onClick={() => void save()} disabled={problems || !graph.nodes.length || (isTemplate && targetName === name) || !mayWrite} title={!mayWrite ? "This session's key does not hold the workflows scope" : isTemplate && targetName === name ? 'Templates are read-only: save under another name' : 'Save (Ctrl+S)'}>
            Save
          </button>
          <button type="button" onClick={undo} disabled={!canUndo} title="Undo (Ctrl+Z)">Undo</button>
          <button type="button" onClick={redo} disabled={!canRedo} title="Redo (Ctrl+Shift+Z)">Redo</button>
          <button type="button" onClick={layout} title="Auto-layout (Shift+L)">Auto-layout</button>
          <button type="button" onClick={fit} title="Fit to view (Shift+F)">Fit view</button>
          <span className="price" data-testid="editor-price" aria-live="polite">
            {validation?.estimate ? `from ${validation.estimate.tokens} tokens a run` : ''}
          </span>
          {name && !problems && <Link to={`/playground?workflow=${encodeURIComponent(name)}`}>Run in playground</Link>}
          {isTemplate && <span className="tag">template: read-only</span>}
        </div>
        {message && <p className={message.error ? 'error bar-message' : 'bar-message'} role={message.error ? 'alert' : 'status'}>{message.text}</p>}
        {issues.general.length > 0 && (
          <div className="error bar-message" role="alert">{issues.general.map((g) => <p key={g}>{g}</p>)}</div>
        )}
        <div className="editor-body">
          <Palette tools={tools.data ?? []} onAdd={(t) => addTool(t)} onVariable={addVariable} onOutput={addOutput} />
          <div className="canvas" ref={wrapper} onDragOver={(e) => e.preventDefault()} onDrop={onDrop} data-testid="canvas">
            <ReactFlow
              nodes={graph.nodes as unknown as Node[]}
              edges={graph.edges as unknown as Edge[]}
              nodeTypes={nodeTypes}
              onNodesChange={onNodesChange}
              onEdgesChange={onEdgesChange}
              onConnect={onConnect}
              onNodeDragStart={record}
              onBeforeDelete={beforeDelete}
              deleteKeyCode={['Delete', 'Backspace']}
              multiSelectionKeyCode={['Shift', 'Meta', 'Control']}
              proOptions={{ hideAttribution: true }}
              fitView
            >
              <Background />
              <Controls />
              <MiniMap pannable zoomable ariaLabel="Overview" />
            </ReactFlow>
          </div>
          <aside className="inspector" aria-label="Inspector">
            {selected.length === 1 ? (
              <NodeInspector node={selected[0]} graph={graph} tools={toolMap} issues={issues.map.get(selected[0].id)} onChange={(change) => update(selected[0].id, change)} onDelete={() => act((g) => ({ nodes: g.nodes.filter((n) => n.id !== selected[0].id), edges: g.edges.filter((e) => e.source !== selected[0].id && e.target !== selected[0].id) }))} />
            ) : (
              <WorkflowPanel name={targetName} description={description} onDescription={setDescription} validation={validation} doc={doc} onImport={(d) => { act(fromDocument(d, place)); setDescription(d.description ?? ''); }} />
            )}
          </aside>
        </div>
      </div>
    </CanvasContext.Provider>
  );
}
