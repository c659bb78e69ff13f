// The editor's workflow panel: description, what discovery shows, price, snippets, JSON.

import { useState } from 'react';
import type { WorkflowValidation as Validation } from '../lib/api';
import type { WorkflowDoc } from './model';

export function WorkflowPanel({
  name,
  description,
  onDescription,
  validation,
  doc,
  onImport,
}: {
  name: string;
  description: string;
  onDescription: (d: string) => void;
  validation: Validation | null;
  doc: WorkflowDoc;
  onImport: (d: WorkflowDoc) => void;
}) {
  const [json, setJson] = useState<string | null>(null);
  const [importError, setImportError] = useState<string | null>(null);
  const d = validation?.description;
  const payload = JSON.stringify(d?.sample_payload ?? { type: 'workflow', target: name, input: {} }, null, 2);
  const base = window.location.origin;
  const curl = `curl -s ${base}/api/v3/run \\\n  -H "X-API-KEY: $ATELIER_API_KEY" \\\n  -H "Content-Type: application/json" \\\n  -d '${payload.replace(/'/g, "'\\''")}'`;
  const python = `import os, time, requests\n\nbase = "${base}"\nheaders = {"X-API-KEY": os.environ["ATELIER_API_KEY"]}\nrun = requests.post(f"{base}/api/v3/run", headers=headers, json=${payload.replace(/\bnull\b/g, 'None').replace(/\btrue\b/g, 'True').replace(/\bfalse\b/g, 'False')}).json()\nwhile True:\n    status = requests.get(f"{base}/api/v3/status/{run['id']}", headers=headers).json()\n    if status["overall_status"] in ("succeeded", "failed", "canceled"):\n        break\n    time.sleep(3)\nprint(status["outputs"])`;
  return (
    <div className="workflow-panel">
      <h2>Workflow</h2>
      <div className="field">
        <label htmlFor="wf-description">Description</label>
        <textarea id="wf-description" value={description} onChange={(e) => onDescription(e.target.value)} rows={2} />
      </div>
      <h3>What discovery shows</h3>
      {d ? (
        <dl className="discovery" data-testid="discovery">
          <dt>Mandatory inputs</dt>
          <dd>{Object.keys(d.inputs.mandatory).join(', ') || 'none'}</dd>
          <dt>Optional inputs</dt>
          <dd>{Object.keys(d.inputs.optional).join(', ') || 'none'}</dd>
          <dt>Linked</dt>
          <dd>{Object.entries(d.inputs.linked).map(([k, v]) => `${k} ← ${v}`).join(', ') || 'none'}</dd>
          <dt>Outputs</dt>
          <dd>{Object.keys(d.outputs).join(', ') || 'none'}</dd>
        </dl>
      ) : (
        <p className="hint">{validation ? 'Shown once the workflow has no problems.' : 'Add a tool to begin.'}</p>
      )}
      {validation?.estimate && (
        <p data-testid="estimate-detail">
          From <strong>{validation.estimate.tokens}</strong> tokens a run ({Object.entries(validation.estimate.nodes).map(([n, t]) => `${n} ${t}`).join(', ')}).
        </p>
      )}
      <h3>Call it</h3>
      <div className="row">
        <button type="button" onClick={() => void navigator.clipboard?.writeText(curl)}>Copy curl</button>
        <button type="button" onClick={() => void navigator.clipboard?.writeText(python)}>Copy Python</button>
      </div>
      <details>
        <summary>curl</summary>
        <pre>{curl}</pre>
      </details>
      <h3>JSON</h3>
      <div className="row">
        <button type="button" onClick={() => setJson(JSON.stringify({ ...doc, name }, null, 2))}>Export</button>
        <button type="button" onClick={() => setJson('')}>Import</button>
      </div>
      {json !== null && (
        <div className="field">
          <label htmlFor="wf-json">Workflow document</label>
          <textarea id="wf-json" value={json} onChange={(e) => setJson(e.target.value)} rows={12} spellCheck={false} data-testid="workflow-json" />
          <div className="row">
            <button
              type="button"
              onClick={() => {
                try {
                  const parsed = JSON.parse(json) as WorkflowDoc;
                  if (!Array.isArray(parsed.nodes)) throw new Error('a workflow document has a "nodes" list');
                  onImport(parsed);
                  setImportError(null);
                  setJson(null);
                } catch (e) {
                  setImportError(e instanceof Error ? e.message : String(e));
                }
              }}
            >
              Load into the canvas
            </button>
            <button type="button" onClick={() => void navigator.clipboard?.writeText(json)}>Copy</button>
            <button type="button" onClick={() => setJson(null)}>Close</button>
          </div>
          {importError && <p className="error" role="alert">{importError}</p>}
        </div>
      )}
    </div>
  );
}
