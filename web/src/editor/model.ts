// The editor's model of a workflow, and its translation to and from the saved document
// (crates/core/src/workflow.rs). Pure: no React, no DOM; unit-tested.
//
// The canvas holds three kinds of node:
// - tool nodes: one per workflow node; a target handle per parameter, a source handle
//   `output`;
// - variable nodes: one per input variable; a source handle `value` drawn to the
//   parameters it fills (a variable fans out);
// - output nodes: one per friendly output name; a target handle `in` from a tool node.
// Edges: tool → tool parameter (a link), variable → tool parameter, tool → output.

import type { ParamSpec, ParamType, Tool, WorkflowDocument } from '../lib/api';

export interface Point {
  x: number;
  y: number;
}

export interface ToolData {
  kind: 'tool';
  name: string;
  tool: string;
  params: Record<string, unknown>;
  bypassed: boolean;
}

export interface VariableData {
  kind: 'variable';
  name: string;
  type: ParamType;
}

export interface OutputData {
  kind: 'output';
  name: string;
}

export type NodeData = ToolData | VariableData | OutputData;

export interface GraphNode {
  id: string;
  type: NodeData['kind'];
  position: Point;
  data: NodeData;
  selected?: boolean;
}

export interface GraphEdge {
  id: string;
  source: string;
  sourceHandle: string;
  target: string;
  targetHandle: string;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

/** The saved document (`crates/wire/src/workflows.rs`), as the editor writes it. */
export type WorkflowDoc = WorkflowDocument;

export const OUTPUT_HANDLE = 'output';
export const VALUE_HANDLE = 'value';
export const IN_HANDLE = 'in';

export function edgeId(source: string, target: string, targetHandle: string): string {
  return `${source}->${target}:${targetHandle}`;
}

/** Names of nodes and variables: what the service accepts (`valid_identifier`). */
export const IDENTIFIER = /^[A-Za-z0-9_-]{1,64}$/;

let counter = 0;
/** A new internal id; never shown, never saved. */
export function newId(prefix: string): string {
  counter += 1;
  return `${prefix}${Date.now().toString(36)}${counter}`;
}

/** A name not in `taken`, from `base` (`Upscale`, `Upscale_2`, …). */
export function uniqueName(base: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  const clean = base.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 60) || 'Node';
  if (!used.has(clean)) return clean;
  for (let i = 2; ; i++) {
    const candidate = `${clean}_${i}`;
    if (!used.has(candidate)) return candidate;
  }
}

/** `Background_Removal` for `background_removal`. */
export function defaultNodeName(tool: string): string {
  return tool
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('_');
}

const layoutKey = (n: GraphNode): string =>
  n.data.kind === 'tool' ? n.data.name : n.data.kind === 'variable' ? `$var:${n.data.name}` : `$out:${n.data.name}`;

/** The saved document of a graph. Empty parameter values are left out. */
export function toDocument(graph: Graph, meta: { name?: string; description?: string }): WorkflowDoc {
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const nameOf = (id: string) => byId.get(id)?.data.name ?? id;
  const doc: WorkflowDoc = { nodes: [] };
  if (meta.name) doc.name = meta.name;
  if (meta.description) doc.description = meta.description;
  const variables: NonNullable<WorkflowDoc['variables']> = {};
  const outputs: Record<string, string> = {};
  const layout: Record<string, [number, number]> = {};
  for (const node of graph.nodes) {
    layout[layoutKey(node)] = [Math.round(node.position.x), Math.round(node.position.y)];
    const data = node.data;
    if (data.kind === 'tool') {
      const params: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(data.params)) {
        if (v !== undefined && v !== null && v !== '') params[k] = v;
      }
      const links: Record<string, string> = {};
      for (const e of graph.edges) {
        if (e.target === node.id && byId.get(e.source)?.data.kind === 'tool') {
          links[e.targetHandle] = `${nameOf(e.source)}.output`;
          delete params[e.targetHandle];
        }
      }
      const entry: WorkflowDoc['nodes'][number] = { name: data.name, tool: data.tool };
      if (Object.keys(params).length) entry.params = params;
      if (Object.keys(links).length) entry.links = links;
      if (data.bypassed) entry.mode = 'bypassed';
      doc.nodes.push(entry);
    } else if (data.kind === 'variable') {
      const targets = graph.edges
        .filter((e) => e.source === node.id)
        .map((e) => `${nameOf(e.target)}.${e.targetHandle}`);
      variables[data.name] = { type: data.type, targets };
    } else {
      const edge = graph.edges.find((e) => e.target === node.id);
      if (edge) outputs[data.name] = `${nameOf(edge.source)}.output`;
      else outputs[data.name] = '';
    }
  }
  if (Object.keys(variables).length) doc.variables = variables;
  doc.outputs = outputs;
  doc.layout = layout;
  return doc;
}

/** The graph of a saved document. Positions come from its layout; what has none is placed
 *  by `place` (an automatic layout). */
export function fromDocument(doc: WorkflowDoc, place: (g: Graph) => Graph): Graph {
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const idOf = new Map<string, string>();
  const layout = doc.layout ?? {};
  let missing = false;
  const at = (key: string): Point => {
    const p = layout[key];
    if (!p) {
      missing = true;
      return { x: 0, y: 0 };
    }
    return { x: p[0], y: p[1] };
  };
  for (const n of doc.nodes) {
    const id = newId('n');
    idOf.set(n.name, id);
    nodes.push({
      id,
      type: 'tool',
      position: at(n.name),
      data: { kind: 'tool', name: n.name, tool: n.tool, params: { ...(n.params ?? {}) }, bypassed: n.mode === 'bypassed' },
    });
  }
  for (const n of doc.nodes) {
    for (const [param, link] of Object.entries(n.links ?? {})) {
      const source = idOf.get(link.split('.')[0]);
      const target = idOf.get(n.name);
      if (source && target) edges.push({ id: edgeId(source, target, param), source, sourceHandle: OUTPUT_HANDLE, target, targetHandle: param });
    }
  }
  for (const [name, v] of Object.entries(doc.variables ?? {})) {
    const id = newId('v');
    nodes.push({ id, type: 'variable', position: at(`$var:${name}`), data: { kind: 'variable', name, type: v.type as ParamType } });
    for (const t of v.targets) {
      const dot = t.indexOf('.');
      const target = idOf.get(t.slice(0, dot));
      if (target) edges.push({ id: edgeId(id, target, t.slice(dot + 1)), source: id, sourceHandle: VALUE_HANDLE, target, targetHandle: t.slice(dot + 1) });
    }
  }
  for (const [name, source] of Object.entries(doc.outputs ?? {})) {
    const id = newId('o');
    nodes.push({ id, type: 'output', position: at(`$out:${name}`), data: { kind: 'output', name } });
    const from = idOf.get(source.split('.')[0]);
    if (from) edges.push({ id: edgeId(from, id, IN_HANDLE), source: from, sourceHandle: OUTPUT_HANDLE, target: id, targetHandle: IN_HANDLE });
  }
  const graph = { nodes, edges };
  return missing ? place(graph) : graph;
}

/** Whether adding an edge from `source` to `target` closes a cycle among tool nodes. */
export function wouldCycle(graph: Graph, source: string, target: string): boolean {
  if (source === target) return true;
  const out = new Map<string, string[]>();
  for (const e of graph.edges) out.set(e.source, [...(out.get(e.source) ?? []), e.target]);
  const seen = new Set<string>();
  const stack = [target];
  while (stack.length) {
    const id = stack.pop()!;
    if (id === source) return true;
    if (seen.has(id)) continue;
    seen.add(id);
    stack.push(...(out.get(id) ?? []));
  }
  return false;
}

export interface Connection {
  source: string;
  sourceHandle: string | null;
  target: string;
  targetHandle: string | null;
}

/** Why a connection may not be made (`null`: it may). */
export function refuseConnection(graph: Graph, tools: Map<string, Tool>, c: Connection): string | null {
  const source = graph.nodes.find((n) => n.id === c.source);
  const target = graph.nodes.find((n) => n.id === c.target);
  if (!source || !target || !c.targetHandle) return 'nothing to connect';
  if (target.data.kind === 'variable') return 'a variable is an input: draw from it, not to it';
  if (source.data.kind === 'output') return 'an output ends the graph: draw to it, not from it';
  if (target.data.kind === 'output') {
    if (source.data.kind !== 'tool') return 'an output takes a node’s result';
    if (graph.edges.some((e) => e.target === target.id)) return `output ${target.data.name} already has a source`;
    return null;
  }
  const spec = tools.get(target.data.tool)?.params.find((p) => p.name === c.targetHandle);
  if (!spec) return `${target.data.name} has no parameter ${c.targetHandle}`;
  if (graph.edges.some((e) => e.target === target.id && e.targetHandle === c.targetHandle)) {
    return `${target.data.name}.${spec.name} is already connected`;
  }
  if (source.data.kind === 'variable') {
    if (source.data.type !== spec.type) {
      return `type mismatch: variable ${source.data.name} is ${source.data.type}, ${target.data.name}.${spec.name} is ${spec.type}`;
    }
    return null;
  }
  const produces = tools.get(source.data.tool)?.output;
  if (spec.type !== 'image') return `type mismatch: ${target.data.name}.${spec.name} is ${spec.type}; only image parameters take a node’s output`;
  if (produces !== 'image') return `type mismatch: ${source.data.name} makes ${produces ?? 'nothing'}, ${target.data.name}.${spec.name} takes an image`;
  if (wouldCycle(graph, source.id, target.id)) return `linking ${source.data.name} to ${target.data.name} would form a cycle`;
  return null;
}

/** A parameter's spec on a tool. */
export function paramOf(tools: Map<string, Tool>, tool: string, name: string): ParamSpec | undefined {
  return tools.get(tool)?.params.find((p) => p.name === name);
}

/** Where a server-side problem belongs: the canvas node it names (by id), and the parameter. */
export function locate(graph: Graph, field: string | null): { id: string | null; param: string | null } {
  if (!field) return { id: null, param: null };
  const find = (kind: NodeData['kind'], name: string) => graph.nodes.find((n) => n.data.kind === kind && n.data.name === name)?.id ?? null;
  if (field.startsWith('variables.')) return { id: find('variable', field.slice(10)), param: null };
  if (field.startsWith('outputs.')) return { id: find('output', field.slice(8)), param: null };
  if (field.startsWith('layout.')) return { id: null, param: null };
  const dot = field.indexOf('.');
  const name = dot < 0 ? field : field.slice(0, dot);
  return { id: find('tool', name), param: dot < 0 ? null : field.slice(dot + 1) };
}

/** Copies of `ids` (tool nodes) and the edges among them, with new ids and free names,
 *  moved by `offset`: what a paste adds. */
export function duplicate(graph: Graph, ids: Set<string>, offset: Point): Graph {
  const taken = graph.nodes.map((n) => n.data.name);
  const mapping = new Map<string, string>();
  const nodes: GraphNode[] = [];
  for (const n of graph.nodes) {
    if (!ids.has(n.id) || n.data.kind !== 'tool') continue;
    const id = newId('n');
    mapping.set(n.id, id);
    const name = uniqueName(n.data.name, taken);
    taken.push(name);
    nodes.push({ id, type: 'tool', selected: true, position: { x: n.position.x + offset.x, y: n.position.y + offset.y }, data: { ...n.data, name, params: { ...n.data.params } } });
  }
  const edges = graph.edges
    .filter((e) => mapping.has(e.source) && mapping.has(e.target))
    .map((e) => {
      const source = mapping.get(e.source)!;
      const target = mapping.get(e.target)!;
      return { ...e, id: edgeId(source, target, e.targetHandle), source, target };
    });
  return { nodes, edges };
}

/** The `<type:TYPE , default value : DEFAULT>` of discovery, read back. */
export function parseDescriptor(text: string): { type: string; default: string | null } | null {
  const m = /^<type:([a-z]+) , default value : (.*)>$/s.exec(text);
  if (!m) return null;
  return { type: m[1], default: m[2] === 'null' ? null : m[2] };
}
