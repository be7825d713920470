import { render } from 'preact';
import { App } from './app.js';
import { html } from './html.js';

render(html`<${App} />`, document.getElementById('app'));
