// A run's graph with each node's live state (read-only).

import { Background, Handle, Position, ReactFlow, type Edge, type Node, type NodeProps } from '@xyflow/react';
import { useMemo } from 'react';
import { autoLayout } from '../editor/layout';
import type { Graph } from '../editor/model';
import type { NodeResult } from '../lib/api';

export interface RunNode {
  name: string;
  tool: string;
  /** Parameter → upstream node name. */
  links: Record<string, string>;
  bypassed: boolean;
}

type StateData = { name: string; tool: string; status: string; progress?: number; error?: string | null };

function StateNode({ data }: NodeProps<Node<StateData>>) {
  return (
    <div className={`run-node status-${data.status}`} data-testid={`run-node-${data.name}`} data-status={data.status}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <div className="run-node-name">{data.name}</div>
      <div className="run-node-tool">{data.tool}</div>
      <div className="run-node-status">
        {data.status}
        {data.status === 'running' && data.progress !== undefined ? ` ${Math.round(data.progress * 100)}%` : ''}
      </div>
      {data.status === 'running' && data.progress !== undefined && (
        <progress max={1} value={data.progress} aria-label={`${data.name} progress`} />
      )}
      {data.error && <div className="run-node-error">{data.error}</div>}
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
}

const nodeTypes = { state: StateNode };

export function RunGraph({ nodes, states }: { nodes: RunNode[]; states: Record<string, NodeResult> | undefined }) {
  const placed = useMemo(() => {
    const graph: Graph = {
      nodes: nodes.map((n) => ({ id: n.name, type: 'tool', position: { x: 0, y: 0 }, data: { kind: 'tool', name: n.name, tool: n.tool, params: {}, bypassed: n.bypassed } })),
      edges: nodes.flatMap((n) => Object.entries(n.links).map(([param, up]) => ({ id: `${up}-${n.name}-${param}`, source: up, sourceHandle: 'output', target: n.name, targetHandle: param }))),
    };
    return autoLayout(graph, () => 1);
  }, [nodes]);
  const rfNodes: Node<StateData>[] = placed.nodes.map((n) => {
    const state = states?.[n.id];
    const bypassed = n.data.kind === 'tool' && n.data.bypassed;
    return {
      id: n.id,
      type: 'state',
      position: n.position,
      draggable: false,
      data: {
        name: n.id,
        tool: n.data.kind === 'tool' ? n.data.tool : '',
        status: bypassed ? 'bypassed' : state?.status ?? 'pending',
        progress: state?.progress,
        error: state?.error?.message ?? null,
      },
    };
  });
  const rfEdges: Edge[] = placed.edges.map((e) => ({ id: e.id, source: e.source, target: e.target, animated: states?.[e.target]?.status === 'running' }));
  return (
    <div className="run-graph" role="group" aria-label="Run graph">
      <ReactFlow nodes={rfNodes} edges={rfEdges} nodeTypes={nodeTypes} fitView nodesConnectable={false} elementsSelectable={false} proOptions={{ hideAttribution: true }}>
        <Background />
      </ReactFlow>
    </div>
  );
}
