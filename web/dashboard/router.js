import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';

// The page's addresses (/app/media, /app/upload, ...) through the History API: each view has an
// address the service answers with the same page, so reload and back work.

const listeners = new Set();

export function navigate(path, { replace = false } = {}) {
  if (path === location.pathname + location.search) return;
  history[replace ? 'replaceState' : 'pushState'](null, '', path);
  for (const listener of listeners) listener();
}

export function useRoute() {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const update = () => setPath(location.pathname);
    listeners.add(update);
    addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      removeEventListener('popstate', update);
    };
  }, []);
  return path;
}

/** A link that changes the view without loading the page again (a modified click opens a tab as usual). */
export function Link({ href, children, ...rest }) {
  const onClick = (event) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(href);
  };
  return html`<a href=${href} onClick=${onClick} ...${rest}>${children}</a>`;
}
