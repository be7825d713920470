import { formatBytes } from './format.js';
import { html } from './html.js';
import { refusalInWords } from './refusal-words.js';

// Each file of the queue: its progress, what happened in words, and cancel or retry.

const STATUS_WORDS = { queued: 'Waiting', uploading: 'Uploading', done: 'Uploaded', cancelled: 'Cancelled', failed: 'Refused' };

export function UploadList({ queue }) {
  if (!queue.items.length) return '';
  const finished = queue.items.some((item) => item.status === 'done' || item.status === 'cancelled' || item.status === 'failed');
  return html`<section class="uploads" aria-labelledby="uploads-heading">
    <div class="section-head">
      <h2 id="uploads-heading">Uploads</h2>
      ${finished ? html`<button type="button" class="secondary" onClick=${queue.clearFinished}>Clear finished</button>` : ''}
    </div>
    <ul class="upload-list">
      ${queue.items.map((item) => html`<${UploadItem} key=${item.id} item=${item} queue=${queue} />`)}
    </ul>
  </section>`;
}

function UploadItem({ item, queue }) {
  const percent = item.total ? Math.floor((item.loaded / item.total) * 100) : 0;
  const refusal = item.error ? refusalInWords(item.error) : null;
  const progressId = `upload-progress-${item.id}`;
  return html`<li class="upload-item" data-status=${item.status}>
    <div class="upload-line">
      <span class="upload-name">${item.options.folder ? `${item.options.folder}/` : ''}${item.fileName}</span>
      <span class="muted">${formatBytes(item.total)}${item.resumable ? ' · resumable' : ''}</span>
    </div>
    <progress id=${progressId} max="100" value=${percent} aria-label=${`Progress of ${item.fileName}`}>${percent}%</progress>
    <p class="upload-status" data-status=${item.status}>
      ${STATUS_WORDS[item.status]}${item.status === 'uploading' ? ` ${percent}%` : ''}
    </p>
    ${refusal ? html`<p class="error">${refusal.title} ${refusal.action}</p>` : ''}
    <div class="upload-actions">
      ${item.status === 'queued' || item.status === 'uploading'
        ? html`<button type="button" class="secondary" onClick=${() => queue.cancel(item.id)}>Cancel<span class="visually-hidden"> ${item.fileName}</span></button>` : ''}
      ${item.status === 'failed' || item.status === 'cancelled'
        ? html`<button type="button" class="secondary" onClick=${() => queue.retry(item.id)}>Retry<span class="visually-hidden"> ${item.fileName}</span></button>` : ''}
    </div>
  </li>`;
}
