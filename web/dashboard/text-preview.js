import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';
import { refusalText } from './refusal-words.js';

// The last lines of a log or text file (GET /preview/{mediaId}), as text.

const LINES = 50;

export function TextPreview({ call, teamId, file }) {
  const [preview, setPreview] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setPreview(null);
    setError(null);
    call('GET', `/v1/cdn/media/${teamId}/preview/${file.id}`, { query: { lines: LINES, from: 'end' } })
      .then(setPreview)
      .catch((failure) => setError(refusalText(failure)));
  }, [file.id, file.updatedAt]);
  if (error) return html`<p class="error">${error}</p>`;
  if (!preview) return html`<p class="muted">Loading the preview…</p>`;
  return html`<figure class="text-preview">
    <figcaption>Last ${preview.lines.length} lines${preview.truncated ? ' (cut at the preview\'s size limit)' : ''}</figcaption>
    <pre tabindex="0" aria-label=${`Last lines of ${file.fileName}`}>${preview.lines.join('\n')}</pre>
  </figure>`;
}
