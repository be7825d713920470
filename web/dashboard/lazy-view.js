import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';

// A view whose modules load when it is first opened, so that the team screens stay out of the
// first load (the page preloads only what main.js imports). Loaded once per page.
const loaded = new Map();

export function LazyView({ load }) {
  const [View, setView] = useState(() => loaded.get(load) ?? null);
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    if (View) return;
    let live = true;
    load().then(
      (view) => {
        loaded.set(load, view);
        if (live) setView(() => view);
      },
      () => live && setFailed(true),
    );
    return () => {
      live = false;
    };
  }, [load, View]);
  if (failed) return html`<p role="alert">This screen could not be loaded. Reload the page to try again.</p>`;
  if (!View) return html`<p class="muted" role="status">Loading…</p>`;
  return html`<${View} />`;
}
