// The editor's palette: the tools to add, and inputs and outputs of the workflow.

import { useState } from 'react';
import type { ParamType, Tool } from '../lib/api';

const VARIABLE_TYPES: ParamType[] = ['image', 'string', 'number', 'select', 'boolean'];

export function Palette({ tools, onAdd, onVariable, onOutput }: { tools: Tool[]; onAdd: (tool: string) => void; onVariable: (t: ParamType) => void; onOutput: () => void }) {
  const [query, setQuery] = useState('');
  const [type, setType] = useState<ParamType>('image');
  const shown = tools.filter((t) => t.name.includes(query.trim().toLowerCase()) || t.description.toLowerCase().includes(query.trim().toLowerCase()));
  return (
    <div className="palette" role="region" aria-label="Add to the workflow">
      <h2>Tools</h2>
      <input
        type="search"
        placeholder="Search tools"
        aria-label="Search tools"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && shown[0]) {
            onAdd(shown[0].name);
            setQuery('');
          }
        }}
        data-testid="palette-search"
      />
      <ul>
        {shown.map((t) => (
          <li key={t.name}>
            <button
              type="button"
              draggable
              onDragStart={(e) => {
                e.dataTransfer.setData('application/x-atelier-tool', t.name);
                e.dataTransfer.effectAllowed = 'move';
              }}
              onClick={() => onAdd(t.name)}
              title={t.description}
              data-testid={`palette-${t.name}`}
            >
              {t.name}
            </button>
          </li>
        ))}
      </ul>
      <h2>Inputs and outputs</h2>
      <div className="row">
        <select value={type} onChange={(e) => setType(e.target.value as ParamType)} aria-label="Type of the new input">
          {VARIABLE_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
        </select>
        <button type="button" onClick={() => onVariable(type)} data-testid="add-variable">Add input</button>
      </div>
      <button type="button" onClick={onOutput} data-testid="add-output">Add output</button>
      <p className="hint">
        Drag a tool onto the canvas, or click it. Draw from a node’s right edge to an image parameter to link them; draw from an input to
        every parameter it fills. Ctrl+Z undo, Ctrl+Shift+Z redo, Ctrl+C/V copy and paste, Ctrl+B bypass, Delete removes, Ctrl+S saves,
        Shift+L lays out, Shift+F fits the view.
      </p>
    </div>
  );
}

