// A run's outputs: images (with a before/after comparison for edits), videos that play,
// download links; expired ones say so.

import { useState } from 'react';
import { expiresIn, isPast, isVideo } from '../lib/format';

export function Outputs({
  outputs,
  expiresAt,
  before,
}: {
  outputs: [string, string[]][];
  expiresAt: string | null;
  /** The input image of an edit (upscale, cut-out, reframe), for the comparison. */
  before?: string | null;
}) {
  const expired = isPast(expiresAt);
  if (!outputs.length) return null;
  return (
    <div className="outputs">
      <p className="hint">{expired ? 'These outputs expired: their files are deleted.' : expiresIn(expiresAt)}</p>
      {outputs.map(([name, urls]) => (
        <figure key={name} className="output" data-testid={`output-${name}`}>
          <figcaption>{name}</figcaption>
          {expired ? (
            <p className="expired" data-testid="expired">expired</p>
          ) : (
            urls.map((url, i) => (
              <div key={url} className="output-item">
                {isVideo(url) ? (
                  <video src={url} controls loop muted playsInline data-testid="output-video" aria-label={`${name} ${i + 1}`} />
                ) : before ? (
                  <Compare before={before} after={url} label={`${name} ${i + 1}`} />
                ) : (
                  <a href={url} target="_blank" rel="noreferrer">
                    <img src={url} alt={`${name} ${i + 1}`} data-testid="output-image" />
                  </a>
                )}
                <div className="row">
                  <a href={url} download>Download</a>
                  <button type="button" onClick={() => void navigator.clipboard?.writeText(url)}>Copy URL</button>
                </div>
              </div>
            ))
          )}
        </figure>
      ))}
    </div>
  );
}

/** The result over its input, split by a slider: left of it the input, right the result. */
function Compare({ before, after, label }: { before: string; after: string; label: string }) {
  const [split, setSplit] = useState(50);
  return (
    <div className="compare">
      <div className="compare-frame">
        <img src={before} alt={`${label} (before)`} className="under" />
        <img src={after} alt={`${label} (after)`} className="over" data-testid="output-image" style={{ clipPath: `inset(0 0 0 ${split}%)` }} />
      </div>
      <input type="range" min={0} max={100} value={split} onChange={(e) => setSplit(Number(e.target.value))} aria-label={`Compare ${label}: before and after`} />
    </div>
  );
}
