// The canvas's node components: tools (a handle per parameter), variables and outputs.

import { Handle, Position, type NodeProps } from '@xyflow/react';
import { createContext, useContext } from 'react';
import type { Tool } from '../lib/api';
import type { OutputData, ToolData, VariableData } from './model';

/** What the nodes read besides their data: the tools, and each node's problems. */
export interface CanvasInfo {
  tools: Map<string, Tool>;
  /** Node id → problems on the node itself, and per parameter. */
  issues: Map<string, { node: string[]; params: Map<string, string> }>;
  /** Node id → why a connection to it was just refused. */
  notices: Map<string, string>;
  /** Node id → parameters fed by a link or a variable. */
  fed: Map<string, Set<string>>;
}

export const CanvasContext = createContext<CanvasInfo>({ tools: new Map(), issues: new Map(), notices: new Map(), fed: new Map() });

function Problems({ id }: { id: string }) {
  const info = useContext(CanvasContext);
  const issues = info.issues.get(id);
  const notice = info.notices.get(id);
  if (!issues?.node.length && !notice) return null;
  return (
    <div className="node-problems" role="alert">
      {issues?.node.map((p) => <p key={p}>{p}</p>)}
      {notice && <p className="notice">{notice}</p>}
    </div>
  );
}

function shown(value: unknown): string {
  if (value === undefined || value === null || value === '') return '';
  const text = String(value);
  if (text.startsWith('data:')) return 'image';
  return text.length > 18 ? `${text.slice(0, 16)}…` : text;
}

export function ToolNode({ id, data, selected }: NodeProps) {
  const d = data as unknown as ToolData;
  const info = useContext(CanvasContext);
  const tool = info.tools.get(d.tool);
  const issues = info.issues.get(id);
  const invalid = !!issues && (issues.node.length > 0 || issues.params.size > 0);
  const fed = info.fed.get(id) ?? new Set<string>();
  return (
    <div
      className={['tool-node', invalid ? 'invalid' : '', d.bypassed ? 'bypassed' : '', selected ? 'selected' : ''].join(' ')}
      data-testid={`node-${d.name}`}
      data-invalid={invalid ? 'true' : undefined}
      role="group"
      aria-label={`${d.name}: ${d.tool}${d.bypassed ? ' (bypassed)' : ''}${invalid ? ' (has problems)' : ''}`}
    >
      <div className="tool-node-head">
        <span className="tool-node-name">{d.name}</span>
        <span className="tool-node-tool">{d.tool}{d.bypassed ? ' · bypassed' : ''}</span>
      </div>
      <ul className="tool-node-params">
        {(tool?.params ?? []).map((p) => {
          const problem = issues?.params.get(p.name);
          return (
            <li key={p.name} className={problem ? 'param invalid' : 'param'} data-param={p.name}>
              <Handle type="target" position={Position.Left} id={p.name} className={`handle-${p.type}`} title={`${d.name}.${p.name} (${p.type})`} />
              <span className="param-name">{p.name}{p.required && !fed.has(p.name) && d.params[p.name] === undefined ? ' *' : ''}</span>
              <span className="param-value">{fed.has(p.name) ? '← linked' : shown(d.params[p.name])}</span>
              {problem && <span className="param-problem" role="alert">{problem}</span>}
            </li>
          );
        })}
      </ul>
      <Problems id={id} />
      <Handle type="source" position={Position.Right} id="output" className={`handle-${tool?.output ?? 'image'}`} title={`${d.name}.output (${tool?.output ?? 'image'})`} />
    </div>
  );
}

export function VariableNode({ id, data, selected }: NodeProps) {
  const d = data as unknown as VariableData;
  const info = useContext(CanvasContext);
  const invalid = !!info.issues.get(id)?.node.length;
  return (
    <div className={['var-node', invalid ? 'invalid' : '', selected ? 'selected' : ''].join(' ')} data-testid={`var-${d.name}`} data-invalid={invalid ? 'true' : undefined}>
      <span className="kind">input</span>
      <span className="var-name">{d.name}</span>
      <span className="var-type">{d.type}</span>
      <Problems id={id} />
      <Handle type="source" position={Position.Right} id="value" className={`handle-${d.type}`} title={`input ${d.name} (${d.type})`} />
    </div>
  );
}

export function OutputNode({ id, data, selected }: NodeProps) {
  const d = data as unknown as OutputData;
  const info = useContext(CanvasContext);
  const invalid = !!info.issues.get(id)?.node.length;
  return (
    <div className={['out-node', invalid ? 'invalid' : '', selected ? 'selected' : ''].join(' ')} data-testid={`out-${d.name}`} data-invalid={invalid ? 'true' : undefined}>
      <Handle type="target" position={Position.Left} id="in" title={`output ${d.name}`} />
      <span className="kind">output</span>
      <span className="out-name">{d.name}</span>
      <Problems id={id} />
    </div>
  );
}

export const nodeTypes = { tool: ToolNode, variable: VariableNode, output: OutputNode };
