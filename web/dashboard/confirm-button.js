import { useState } from 'preact/hooks';
import { html } from './html.js';

// A destructive action in two steps: "Delete x…" shows the question with the button that does it.

export function ConfirmButton({ label, question, confirmLabel, keepLabel = 'Cancel', onConfirm, busy = false }) {
  const [asking, setAsking] = useState(false);
  if (!asking) return html`<button type="button" class="secondary" disabled=${busy} onClick=${() => setAsking(true)}>${label}</button>`;
  return html`<span class="confirm" role="group" aria-label=${question}>${question}
    <button type="button" class="danger" disabled=${busy} onClick=${async () => {
      await onConfirm();
      setAsking(false);
    }}>${confirmLabel}</button>
    <button type="button" class="secondary" onClick=${() => setAsking(false)}>${keepLabel}</button></span>`;
}
