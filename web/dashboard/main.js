import { render } from 'preact';
import { App } from './app.js';
import { html } from './html.js';

const root = document.getElementById('app');
root.replaceChildren(); // the "Loading…" line the page shows until the modules run
render(html`<${App} />`, root);
