// The editor's graph as state: the nodes and edges on the canvas, one undo step per user
// action (editor/history.ts), React Flow's changes applied as they come, and the clipboard.
// The page (pages/Editor.tsx) decides what an action is; this hook keeps the state right.

import { applyEdgeChanges, applyNodeChanges, type Edge, type EdgeChange, type Node, type NodeChange } from '@xyflow/react';
import { useCallback, useRef, useState } from 'react';
import { History } from './history';
import { duplicate, type Graph, type GraphEdge, type GraphNode } from './model';

export const EMPTY: Graph = { nodes: [], edges: [] };

/** Where pasted nodes go, relative to the nodes they copy. */
const PASTE_OFFSET = { x: 40, y: 40 };

export interface GraphState {
  graph: Graph;
  /** Applies a user action: the state before it becomes one undo step. */
  act: (next: Graph | ((g: Graph) => Graph)) => void;
  /** Replaces the graph and forgets its history (a workflow opened). */
  reset: (graph: Graph) => void;
  undo: () => void;
  redo: () => void;
  canUndo: boolean;
  canRedo: boolean;
  /** Records the state now as an undo step, before an action React Flow carries out (a drag). */
  record: () => void;
  onNodesChange: (changes: NodeChange[]) => void;
  onEdgesChange: (changes: EdgeChange[]) => void;
  /** Records the state before React Flow deletes nodes or edges; lets it go on. */
  beforeDelete: () => Promise<boolean>;
  /** Copies the selected tool nodes and the edges between them; answers how many it copied. */
  copy: () => number;
  /** Pastes what was copied, offset, selected, under names not taken yet. */
  paste: () => void;
  /** Turns bypass on or off for the selected tool nodes. */
  toggleBypass: () => void;
}

export function useGraph(): GraphState {
  const [graph, setGraph] = useState<Graph>(EMPTY);
  const history = useRef(new History<Graph>());
  const clipboard = useRef<Graph | null>(null);
  // History lives in a ref; a tick re-renders the buttons that read canUndo and canRedo.
  const [, setTick] = useState(0);
  const changed = () => setTick((t) => t + 1);

  const act = useCallback((next: Graph | ((g: Graph) => Graph)) => {
    setGraph((current) => {
      const value = typeof next === 'function' ? next(current) : next;
      if (value !== current) history.current.record(current);
      return value;
    });
    changed();
  }, []);

  const reset = useCallback((value: Graph) => {
    history.current = new History<Graph>();
    setGraph(value);
    changed();
  }, []);

  const undo = useCallback(() => {
    setGraph((current) => history.current.undo(current) ?? current);
    changed();
  }, []);
  const redo = useCallback(() => {
    setGraph((current) => history.current.redo(current) ?? current);
    changed();
  }, []);

  const record = useCallback(() => {
    history.current.record(graph);
    changed();
  }, [graph]);

  // React Flow's changes are applied as they come; the state before an action is recorded
  // when it starts: a drag when it starts, a deletion (of nodes with their edges) before it.
  const onNodesChange = useCallback((changes: NodeChange[]) => {
    setGraph((g) => {
      const nodes = applyNodeChanges(changes, g.nodes as unknown as Node[]) as unknown as GraphNode[];
      const alive = new Set(nodes.map((n) => n.id));
      return { nodes, edges: g.edges.filter((e) => alive.has(e.source) && alive.has(e.target)) };
    });
  }, []);
  const onEdgesChange = useCallback((changes: EdgeChange[]) => {
    setGraph((g) => ({ ...g, edges: applyEdgeChanges(changes, g.edges as unknown as Edge[]) as unknown as GraphEdge[] }));
  }, []);
  const beforeDelete = useCallback(async () => {
    record();
    return true;
  }, [record]);

  const copy = useCallback(() => {
    const ids = selectedTools(graph);
    if (ids.size) {
      clipboard.current = {
        nodes: graph.nodes.filter((n) => ids.has(n.id)),
        edges: graph.edges.filter((e) => ids.has(e.source) && ids.has(e.target)),
      };
    }
    return ids.size;
  }, [graph]);

  const paste = useCallback(() => {
    const clip = clipboard.current;
    if (!clip) return;
    act((g) => {
      // Names are taken from what the canvas holds now (the copied nodes may be gone).
      const known = new Set(g.nodes.map((n) => n.id));
      const source: Graph = { nodes: [...g.nodes, ...clip.nodes.filter((n) => !known.has(n.id))], edges: clip.edges };
      const copies = duplicate(source, new Set(clip.nodes.map((n) => n.id)), PASTE_OFFSET);
      return { nodes: [...g.nodes.map((n) => ({ ...n, selected: false })), ...copies.nodes], edges: [...g.edges, ...copies.edges] };
    });
  }, [act]);

  const toggleBypass = useCallback(() => {
    const ids = selectedTools(graph);
    if (!ids.size) return;
    act((g) => ({ ...g, nodes: g.nodes.map((n) => (ids.has(n.id) && n.data.kind === 'tool' ? { ...n, data: { ...n.data, bypassed: !n.data.bypassed } } : n)) }));
  }, [graph, act]);

  return {
    graph,
    act,
    reset,
    undo,
    redo,
    canUndo: history.current.canUndo,
    canRedo: history.current.canRedo,
    record,
    onNodesChange,
    onEdgesChange,
    beforeDelete,
    copy,
    paste,
    toggleBypass,
  };
}

function selectedTools(graph: Graph): Set<string> {
  return new Set(graph.nodes.filter((n) => n.selected && n.data.kind === 'tool').map((n) => n.id));
}
