import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';

// One polite live region for what just happened ("Link copied", "3 files deleted"): screen readers
// announce it, sighted users see it for a few seconds.

const listeners = new Set();

export function announce(text, tone = 'info') {
  for (const listener of listeners) listener({ text, tone, at: Date.now() });
}

export function Notices() {
  const [notice, setNotice] = useState(null);
  useEffect(() => {
    let timer;
    const show = (next) => {
      setNotice(next);
      clearTimeout(timer);
      timer = setTimeout(() => setNotice(null), 6000);
    };
    listeners.add(show);
    return () => {
      listeners.delete(show);
      clearTimeout(timer);
    };
  }, []);
  return html`<div class="notice" role="status" aria-live="polite" data-tone=${notice?.tone ?? 'info'}>${notice?.text ?? ''}</div>`;
}
