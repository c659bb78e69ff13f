// The editor's inspector: the selected node's name, tool parameters and what feeds them.

import { useEffect, useState } from 'react';
import { Field, fromParam } from '../forms/Fields';
import type { Tool } from '../lib/api';
import { IDENTIFIER, type Graph, type GraphNode, type ToolData } from './model';

export function NodeInspector({
  node,
  graph,
  tools,
  issues,
  onChange,
  onDelete,
}: {
  node: GraphNode;
  graph: Graph;
  tools: Map<string, Tool>;
  issues: { node: string[]; params: Map<string, string> } | undefined;
  onChange: (change: (n: GraphNode) => GraphNode) => void;
  onDelete: () => void;
}) {
  const [draft, setDraft] = useState(node.data.name);
  useEffect(() => setDraft(node.data.name), [node.id, node.data.name]);
  const taken = graph.nodes.filter((n) => n.id !== node.id && (node.data.kind === 'output' ? n.data.kind === 'output' : n.data.kind !== 'output')).map((n) => n.data.name);
  const nameProblem =
    node.data.kind !== 'output' && !IDENTIFIER.test(draft)
      ? 'Names are 1-64 characters of A-Z a-z 0-9 _ -'
      : !draft.trim()
        ? 'A name is needed'
        : taken.includes(draft)
          ? 'Another node has this name'
          : null;
  const rename = () => {
    if (!nameProblem && draft !== node.data.name) onChange((n) => ({ ...n, data: { ...n.data, name: draft } }));
  };
  const fed = new Map(graph.edges.filter((e) => e.target === node.id).map((e) => [e.targetHandle, graph.nodes.find((n) => n.id === e.source)?.data.name ?? '?']));
  const kindLabel = node.data.kind === 'tool' ? node.data.tool : node.data.kind === 'variable' ? `input (${node.data.type})` : 'output';
  return (
    <div className="node-inspector">
      <h2>{kindLabel}</h2>
      <div className={nameProblem ? 'field invalid' : 'field'}>
        <label htmlFor="node-name">Name</label>
        <input id="node-name" value={draft} onChange={(e) => setDraft(e.target.value)} onBlur={rename} onKeyDown={(e) => e.key === 'Enter' && rename()} data-testid="node-name" />
        {nameProblem && <p className="error" role="alert">{nameProblem}</p>}
      </div>
      {issues?.node.map((p) => <p key={p} className="error" role="alert">{p}</p>)}
      {node.data.kind === 'tool' && (
        <ToolParams data={node.data} tool={tools.get(node.data.tool)} fed={fed} issues={issues?.params} onChange={(params) => onChange((n) => ({ ...n, data: { ...(n.data as ToolData), params } }))} onBypass={(bypassed) => onChange((n) => ({ ...n, data: { ...(n.data as ToolData), bypassed } }))} />
      )}
      {node.data.kind === 'variable' && (
        <p className="hint">Fills: {graph.edges.filter((e) => e.source === node.id).map((e) => `${graph.nodes.find((n) => n.id === e.target)?.data.name}.${e.targetHandle}`).join(', ') || 'nothing yet: draw it to parameters'}</p>
      )}
      {node.data.kind === 'output' && (
        <p className="hint">From: {graph.edges.filter((e) => e.target === node.id).map((e) => graph.nodes.find((n) => n.id === e.source)?.data.name).join(', ') || 'nothing yet: draw a node’s output to it'}</p>
      )}
      <button type="button" className="danger" onClick={onDelete}>Delete {node.data.kind === 'tool' ? 'node' : node.data.kind === 'variable' ? 'input' : 'output'}</button>
    </div>
  );
}

function ToolParams({
  data,
  tool,
  fed,
  issues,
  onChange,
  onBypass,
}: {
  data: ToolData;
  tool: Tool | undefined;
  fed: Map<string, string>;
  issues: Map<string, string> | undefined;
  onChange: (params: Record<string, unknown>) => void;
  onBypass: (bypassed: boolean) => void;
}) {
  if (!tool) return <p className="error">Unknown tool {data.tool}.</p>;
  return (
    <>
      <p className="hint">{tool.description}</p>
      <label className="check">
        <input type="checkbox" checked={data.bypassed} onChange={(e) => onBypass(e.target.checked)} disabled={!tool.primary_image} data-testid="bypass" />
        Bypass (passes {tool.primary_image ?? 'nothing'} through, costs nothing){tool.primary_image ? '' : ': this tool has no image to pass through'}
      </label>
      {tool.params.map((p) =>
        fed.has(p.name) ? (
          <div className="field" key={p.name} data-field={p.name}>
            <span className="label">{p.name}</span>
            <p className="hint">from {fed.get(p.name)}</p>
            {issues?.get(p.name) && <p className="error" role="alert">{issues.get(p.name)}</p>}
          </div>
        ) : (
          <Field
            key={p.name}
            spec={{ ...fromParam(p), required: false }}
            value={data.params[p.name]}
            onChange={(v) => {
              const params = { ...data.params };
              if (v === undefined) delete params[p.name];
              else params[p.name] = v;
              onChange(params);
            }}
            error={issues?.get(p.name) ?? null}
          />
        ),
      )}
      <p className="hint">Parameters left empty become inputs of the workflow (required ones mandatory).</p>
    </>
  );
}

