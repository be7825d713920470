import { useEffect, useRef } from 'preact/hooks';
import { html } from './html.js';
import { copyText } from './copy-text.js';

// A key's secret as the API shows it, once (creation and reroll): copy it now or never.

export function SecretOnce({ title, secret, onDone }) {
  const field = useRef(null);
  // The secret gets the focus: a keyboard or screen reader user lands on what to copy.
  useEffect(() => field.current?.focus(), [secret]);
  return html`<section class="card secret-once" aria-labelledby="secret-once-title">
    <h2 id="secret-once-title">${title}</h2>
    <p><strong>Copy it now: you will not see it again.</strong> The service keeps only a hash of it; if it is lost, reroll the key.</p>
    <label for="secret-once-value">Secret key</label>
    <div class="inline-field">
      <input id="secret-once-value" ref=${field} class="secret-value" readonly value=${secret} spellcheck="false" autocomplete="off"
        onFocus=${(event) => event.currentTarget.select()} />
      <button type="button" onClick=${() => copyText(secret, 'Key')}>Copy key</button>
    </div>
    <button type="button" class="secondary" onClick=${onDone}>I have copied it</button>
  </section>`;
}
