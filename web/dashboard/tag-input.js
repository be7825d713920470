import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';

// A field that adds one tag at a time (Enter or its button), suggesting the team's tags in use.

export const TAG_PATTERN = /^[a-z0-9_.:@-]{1,64}$/;

export function normaliseTag(text) {
  return text.trim().toLowerCase();
}

export function TagInput({ id, label, call, teamId, onAdd, buttonLabel = 'Add tag' }) {
  const [text, setText] = useState('');
  const [suggestions, setSuggestions] = useState([]);
  const [problem, setProblem] = useState(null);

  useEffect(() => {
    const timer = setTimeout(() => {
      call('GET', `/v1/cdn/media/${teamId}/tags`, { query: { search: normaliseTag(text), limit: 10 } })
        .then((answer) => setSuggestions(answer.tags.map((entry) => entry.tag)))
        .catch(() => setSuggestions([]));
    }, 250);
    return () => clearTimeout(timer);
  }, [text]);

  const add = () => {
    const tag = normaliseTag(text);
    if (!tag) return;
    if (!TAG_PATTERN.test(tag)) {
      setProblem('A tag is 1-64 characters of a-z 0-9 _ . : @ -');
      return;
    }
    setProblem(null);
    setText('');
    onAdd(tag);
  };

  return html`<div class="tag-input">
    <label for=${id}>${label}</label>
    <div class="inline-field">
      <input id=${id} list=${`${id}-suggestions`} value=${text} autocomplete="off" spellcheck="false"
        aria-describedby=${problem ? `${id}-problem` : undefined} aria-invalid=${problem ? 'true' : undefined}
        onInput=${(event) => setText(event.currentTarget.value)}
        onKeyDown=${(event) => {
          if (event.key === 'Enter') {
            event.preventDefault();
            add();
          }
        }} />
      <button type="button" class="secondary" onClick=${add}>${buttonLabel}</button>
    </div>
    <datalist id=${`${id}-suggestions`}>${suggestions.map((tag) => html`<option key=${tag} value=${tag} />`)}</datalist>
    ${problem ? html`<p id=${`${id}-problem`} class="error">${problem}</p>` : ''}
  </div>`;
}

/** Removable chips of tags. */
export function TagChips({ tags, onRemove, label }) {
  if (!tags.length) return '';
  return html`<ul class="chips" aria-label=${label}>
    ${tags.map((tag) => html`<li key=${tag} class="chip"><span>${tag}</span>
      ${onRemove ? html`<button type="button" class="chip-remove" aria-label=${`Remove tag ${tag}`} onClick=${() => onRemove(tag)}>×</button>` : ''}
    </li>`)}
  </ul>`;
}
