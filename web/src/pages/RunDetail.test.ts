import { describe, expect, it } from 'vitest';
import { waitingForEngine } from './RunDetail';
import type { NodeResult, RunStatus } from '../lib/api';

const base: RunStatus = { overall_status: 'queued', error: null, created_at: '', finished_at: null, expires_at: null, tokens: 0 };

describe('waitingForEngine', () => {
  it('reads a node run and each node of a workflow run', () => {
    expect(waitingForEngine(base)).toBe(false);
    expect(waitingForEngine({ ...base, waiting_for: 'engine' })).toBe(true);
    const node: NodeResult = { id: 'gen_1', status: 'queued', output: [], error: null, model_name: 'virtual_tryon' };
    expect(waitingForEngine({ ...base, nodes: { a: node } })).toBe(false);
    expect(waitingForEngine({ ...base, nodes: { a: node, b: { ...node, waiting_for: 'engine' } } })).toBe(true);
  });
});
