// Form fields generated from a parameter's schema (/api/v3/tools): images by drop, file
// picker, paste or URL, with a thumbnail; selects; numbers within their bounds; text;
// booleans.

import { useId, useState, type ClipboardEvent, type DragEvent } from 'react';
import type { ParamSpec, ParamType } from '../lib/api';

export interface FieldSpec {
  name: string;
  label?: string;
  type: ParamType;
  required: boolean;
  default?: unknown;
  values?: unknown[];
  min?: number;
  max?: number;
  description?: string;
}

export function fromParam(p: ParamSpec, label?: string): FieldSpec {
  return { ...p, label: label ?? p.name };
}

function readFile(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

export function Field({
  spec,
  value,
  onChange,
  error,
}: {
  spec: FieldSpec;
  value: unknown;
  onChange: (v: unknown) => void;
  error?: string | null;
}) {
  const id = useId();
  const label = spec.label ?? spec.name;
  const describedBy = error ? `${id}-error` : undefined;
  let control;
  switch (spec.type) {
    case 'image':
      control = <ImageInput id={id} label={label} value={typeof value === 'string' ? value : ''} onChange={onChange} />;
      break;
    case 'select':
      control = (
        <select id={id} value={value === undefined || value === null ? '' : String(value)} onChange={(e) => onChange(e.target.value || undefined)} aria-describedby={describedBy}>
          <option value="">{spec.default !== undefined && spec.default !== null ? `default (${String(spec.default)})` : '—'}</option>
          {(spec.values ?? []).map((v) => (
            <option key={String(v)} value={String(v)}>
              {String(v)}
            </option>
          ))}
        </select>
      );
      break;
    case 'number':
      control = spec.values && spec.values.length ? (
        <select id={id} value={value === undefined || value === null ? '' : String(value)} onChange={(e) => onChange(e.target.value === '' ? undefined : Number(e.target.value))} aria-describedby={describedBy}>
          <option value="">{spec.default !== undefined && spec.default !== null ? `default (${String(spec.default)})` : '—'}</option>
          {spec.values.map((v) => (
            <option key={String(v)} value={String(v)}>{String(v)}</option>
          ))}
        </select>
      ) : (
        <input
          id={id}
          type="number"
          min={spec.min}
          max={spec.max}
          step="any"
          placeholder={spec.default !== undefined && spec.default !== null ? String(spec.default) : ''}
          value={value === undefined || value === null ? '' : String(value)}
          onChange={(e) => onChange(e.target.value === '' ? undefined : Number(e.target.value))}
          aria-describedby={describedBy}
        />
      );
      break;
    case 'boolean':
      control = (
        <select id={id} value={value === undefined || value === null ? '' : String(value)} onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value === 'true')} aria-describedby={describedBy}>
          <option value="">{spec.default !== undefined && spec.default !== null ? `default (${String(spec.default)})` : '—'}</option>
          <option value="true">yes</option>
          <option value="false">no</option>
        </select>
      );
      break;
    default:
      control = (
        <input
          id={id}
          type="text"
          placeholder={spec.default !== undefined && spec.default !== null ? String(spec.default) : ''}
          value={value === undefined || value === null ? '' : String(value)}
          onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)}
          aria-describedby={describedBy}
        />
      );
  }
  return (
    <div className={error ? 'field invalid' : 'field'} data-field={spec.name}>
      <label htmlFor={id}>
        {label}
        {spec.required && <span className="required" aria-label="required"> *</span>}
        {spec.type === 'number' && spec.min !== undefined && spec.max !== undefined && !spec.values?.length && (
          <span className="range"> ({spec.min}–{spec.max})</span>
        )}
      </label>
      {control}
      {error && (
        <p className="error" id={`${id}-error`} role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** An image: a data URI from a dropped, picked or pasted file, or a URL typed in. */
function ImageInput({ id, label, value, onChange }: { id: string; label: string; value: string; onChange: (v: unknown) => void }) {
  const [over, setOver] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const take = async (file: File | undefined | null) => {
    if (!file) return;
    if (!file.type.startsWith('image/')) {
      setProblem(`${file.name} is not an image`);
      return;
    }
    setProblem(null);
    onChange(await readFile(file));
  };
  const drop = (e: DragEvent) => {
    e.preventDefault();
    setOver(false);
    void take(e.dataTransfer.files[0]);
  };
  const paste = (e: ClipboardEvent) => {
    const file = [...e.clipboardData.files].find((f) => f.type.startsWith('image/'));
    if (file) {
      e.preventDefault();
      void take(file);
    }
  };
  const isData = value.startsWith('data:');
  return (
    <div
      className={over ? 'image-input over' : 'image-input'}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={drop}
      onPaste={paste}
    >
      {value ? <img src={value} alt={`${label} preview`} className="thumb" /> : <div className="thumb empty" aria-hidden="true">drop an image</div>}
      <div className="image-controls">
        <input
          id={id}
          type="url"
          inputMode="url"
          placeholder="https://… or drop, paste, pick a file"
          value={isData ? '' : value}
          onChange={(e) => onChange(e.target.value || undefined)}
          aria-label={`${label} URL`}
        />
        <label className="file-button">
          Choose file
          <input type="file" accept="image/*" onChange={(e) => void take(e.target.files?.[0])} aria-label={`${label} file`} />
        </label>
        {isData && (
          <button type="button" onClick={() => onChange(undefined)}>
            Clear
          </button>
        )}
      </div>
      {problem && <p className="error" role="alert">{problem}</p>}
    </div>
  );
}
