// Automatic layout: left to right, with dagre (React Flow ships none).

import dagre from '@dagrejs/dagre';
import type { Graph, GraphNode } from './model';

/** Size a node takes on the canvas, for layout (tool nodes grow with their parameters). */
export function nodeSize(node: GraphNode, paramCount: number): { width: number; height: number } {
  if (node.data.kind === 'tool') return { width: 240, height: 64 + 24 * paramCount };
  return { width: 180, height: 56 };
}

/** Every node placed anew, ranks left to right, none overlapping. */
export function autoLayout(graph: Graph, paramCount: (node: GraphNode) => number): Graph {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: 40, ranksep: 90, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of graph.nodes) g.setNode(node.id, nodeSize(node, paramCount(node)));
  for (const edge of graph.edges) g.setEdge(edge.source, edge.target);
  dagre.layout(g);
  return {
    edges: graph.edges,
    nodes: graph.nodes.map((node) => {
      const placed = g.node(node.id);
      const { width, height } = nodeSize(node, paramCount(node));
      return { ...node, position: { x: Math.round(placed.x - width / 2), y: Math.round(placed.y - height / 2) } };
    }),
  };
}
