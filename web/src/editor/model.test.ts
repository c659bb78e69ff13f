import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Tool } from '../lib/api';
import { History } from './history';
import { autoLayout, nodeSize } from './layout';
import {
  duplicate,
  fromDocument,
  locate,
  parseDescriptor,
  refuseConnection,
  toDocument,
  uniqueName,
  type Graph,
  type WorkflowDoc,
} from './model';

const templates = join(__dirname, '../../../templates');
const identity = (g: Graph) => g;

function tool(name: string, output: Tool['output'], params: [string, Tool['params'][number]['type']][]): Tool {
  return {
    name,
    description: '',
    engine: 'builtin',
    fidelity: 'preview',
    output,
    price: '1 per run',
    primary_image: params.find(([, t]) => t === 'image')?.[0] ?? null,
    params: params.map(([n, type]) => ({ name: n, type, required: type === 'image', default: null })),
  };
}

const TOOLS = new Map<string, Tool>([
  ['upscale', tool('upscale', 'image', [['image', 'image'], ['scale', 'number']])],
  ['virtual_tryon', tool('virtual_tryon', 'image', [['model_image', 'image'], ['garment_image', 'image'], ['category', 'select']])],
  ['video', tool('video', 'video', [['image', 'image'], ['duration', 'number']])],
]);

describe('a saved document and the graph', () => {
  for (const file of readdirSync(templates).filter((f) => f.endsWith('.json'))) {
    it(`round-trips ${file}`, () => {
      const doc = JSON.parse(readFileSync(join(templates, file), 'utf8')) as WorkflowDoc;
      const graph = fromDocument(doc, identity);
      const back = toDocument(graph, { name: doc.name, description: doc.description });
      expect(back.nodes).toEqual(doc.nodes.map((n) => ({ ...n, ...(n.params && Object.keys(n.params).length ? {} : { params: undefined }) })).map((n) => JSON.parse(JSON.stringify(n))));
      expect(back.variables).toEqual(doc.variables);
      expect(back.outputs).toEqual(doc.outputs);
      // A second trip keeps everything, the layout included.
      const again = toDocument(fromDocument(back, identity), { name: doc.name, description: doc.description });
      expect(again).toEqual(back);
    });
  }

  it('places the graph when a position is missing, and keeps a complete layout', () => {
    const doc: WorkflowDoc = { nodes: [{ name: 'A', tool: 'upscale' }], outputs: { out: 'A.output' }, layout: { A: [5, 7] } };
    let placed = 0;
    const count = (g: Graph) => { placed += 1; return g; };
    fromDocument(doc, count);
    expect(placed).toBe(1);
    const kept = fromDocument({ ...doc, layout: { A: [5, 7], '$out:out': [300, 7] } }, count);
    expect(placed).toBe(1);
    expect(kept.nodes.map((n) => n.position)).toEqual([{ x: 5, y: 7 }, { x: 300, y: 7 }]);
  });

  it('leaves empty values out and never saves a value for a linked parameter', () => {
    const doc: WorkflowDoc = {
      nodes: [
        { name: 'T', tool: 'virtual_tryon', params: { category: 'tops' } },
        { name: 'U', tool: 'upscale', params: { scale: 2 }, links: { image: 'T.output' } },
      ],
      outputs: { hero: 'U.output' },
    };
    const graph = fromDocument(doc, identity);
    const u = graph.nodes.find((n) => n.data.name === 'U')!;
    if (u.data.kind === 'tool') u.data.params = { ...u.data.params, image: 'leftover', scale: '' };
    const out = toDocument(graph, {});
    expect(out.nodes[1]).toEqual({ name: 'U', tool: 'upscale', links: { image: 'T.output' } });
  });
});

describe('connections', () => {
  const doc: WorkflowDoc = {
    variables: { garment: { type: 'image', targets: ['T.garment_image'] } },
    nodes: [
      { name: 'T', tool: 'virtual_tryon' },
      { name: 'U', tool: 'upscale', links: { image: 'T.output' } },
      { name: 'V', tool: 'video' },
      { name: 'U2', tool: 'upscale' },
    ],
    outputs: { hero: 'U.output' },
  };
  const graph = fromDocument(doc, identity);
  const id = (name: string) => graph.nodes.find((n) => n.data.name === name)!.id;
  const connect = (source: string, target: string, targetHandle: string) =>
    refuseConnection(graph, TOOLS, { source: id(source), sourceHandle: null, target: id(target), targetHandle });

  it('links an image output to a free image parameter', () => {
    expect(connect('U', 'U2', 'image')).toBeNull();
    expect(connect('T', 'V', 'image')).toBeNull();
  });
  it('refuses type mismatches, taken parameters and cycles, saying why', () => {
    expect(connect('T', 'U2', 'scale')).toMatch(/type mismatch.*number/);
    expect(connect('V', 'U2', 'image')).toMatch(/makes video/);
    expect(connect('U2', 'U', 'image')).toMatch(/already connected/);
    expect(connect('U', 'T', 'model_image')).toMatch(/cycle/);
    expect(connect('T', 'T', 'model_image')).toMatch(/cycle/);
    expect(connect('garment', 'U2', 'scale')).toMatch(/variable garment is image/);
    expect(connect('garment', 'U2', 'image')).toBeNull();
    expect(connect('U2', 'garment', 'value')).toMatch(/variable is an input/);
    expect(connect('U2', 'hero', 'in')).toMatch(/already has a source/);
  });
});

describe('errors from the service', () => {
  const graph = fromDocument(
    { variables: { g: { type: 'image', targets: [] } }, nodes: [{ name: 'A', tool: 'upscale' }], outputs: { o: 'A.output' } },
    identity,
  );
  const id = (kind: string, name: string) => graph.nodes.find((n) => n.data.kind === kind && n.data.name === name)!.id;
  it('land on the node and parameter they name', () => {
    expect(locate(graph, 'A.scale')).toEqual({ id: id('tool', 'A'), param: 'scale' });
    expect(locate(graph, 'A')).toEqual({ id: id('tool', 'A'), param: null });
    expect(locate(graph, 'variables.g')).toEqual({ id: id('variable', 'g'), param: null });
    expect(locate(graph, 'outputs.o')).toEqual({ id: id('output', 'o'), param: null });
    expect(locate(graph, 'Ghost.image')).toEqual({ id: null, param: 'image' });
    expect(locate(graph, null)).toEqual({ id: null, param: null });
  });
});

describe('editing', () => {
  it('names nodes uniquely', () => {
    expect(uniqueName('Upscale', ['Upscale', 'Upscale_2'])).toBe('Upscale_3');
    expect(uniqueName('a b/c', [])).toBe('a_b_c');
  });

  it('pastes copies with their inner links, new names and ids', () => {
    const graph = fromDocument(
      { nodes: [{ name: 'A', tool: 'upscale' }, { name: 'B', tool: 'upscale', links: { image: 'A.output' } }, { name: 'C', tool: 'upscale', links: { image: 'B.output' } }] },
      identity,
    );
    const [a, b] = graph.nodes;
    const copy = duplicate(graph, new Set([a.id, b.id]), { x: 40, y: 40 });
    expect(copy.nodes.map((n) => n.data.name)).toEqual(['A_2', 'B_2']);
    expect(copy.edges).toHaveLength(1);
    expect(copy.edges[0].source).toBe(copy.nodes[0].id);
    expect(copy.nodes[0].position).toEqual({ x: a.position.x + 40, y: a.position.y + 40 });
  });

  it('undoes and redoes whole actions', () => {
    const h = new History<number[]>();
    let state = [1];
    h.record(state);
    state = [1, 2, 3, 4]; // one paste of three
    expect(h.undo(state)).toEqual([1]);
    expect(h.redo([1])).toEqual([1, 2, 3, 4]);
    expect(h.canRedo).toBe(false);
    h.record([1, 2, 3, 4]);
    expect(h.undo([9])).toEqual([1, 2, 3, 4]);
    expect(h.undo([1, 2, 3, 4])).toEqual([1]);
    expect(h.undo([1])).toBeNull();
  });

  it('lays out without overlaps, left to right', () => {
    const doc = JSON.parse(readFileSync(join(templates, 'product-reframes.json'), 'utf8')) as WorkflowDoc;
    const graph = autoLayout(fromDocument(doc, identity), () => 3);
    const boxes = graph.nodes.map((n) => ({ ...n.position, ...nodeSize(n, 3), name: n.data.name }));
    for (const a of boxes) {
      for (const b of boxes) {
        if (a === b) continue;
        const apart = a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y;
        expect(apart, `${a.name} / ${b.name}`).toBe(true);
      }
    }
    const x = (name: string) => graph.nodes.find((n) => n.data.name === name)!.position.x;
    expect(x('Shoot')).toBeLessThan(x('Square'));
  });
});

describe('discovery descriptors', () => {
  it('read back', () => {
    expect(parseDescriptor('<type:image , default value : null>')).toEqual({ type: 'image', default: null });
    expect(parseDescriptor('<type:number , default value : 2>')).toEqual({ type: 'number', default: '2' });
    expect(parseDescriptor('<type:string , default value : a, b>')).toEqual({ type: 'string', default: 'a, b' });
    expect(parseDescriptor('Tryon.output')).toBeNull();
  });
});
