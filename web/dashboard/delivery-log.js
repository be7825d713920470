import { useCallback, useEffect, useState } from 'preact/hooks';
import { formatDate } from './format.js';
import { html } from './html.js';
import { useLatestRequest } from './latest-request.js';
import { announce } from './notices.js';
import { Pager } from './pager.js';
import { refusalText } from './refusal-words.js';

// One automation's deliveries, newest first (GET .../deliveries, paged): status, attempts, the
// receiver's last answer, dates; a failed one can be sent again. While some are still on their
// way the list refreshes itself every two seconds.

const PAGE_SIZE = 20;
const STATUS_WORDS = { pending: 'Waiting', delivering: 'Sending', delivered: 'Delivered', failed: 'Failed' };
const EVENT_WORDS = { 'media.uploaded': 'File uploaded', 'automation.test': 'Test message' };

function answerOf(delivery) {
  if (delivery.lastStatus !== null) return `HTTP ${delivery.lastStatus}${delivery.lastError && delivery.status !== 'delivered' ? ` · ${delivery.lastError}` : ''}`;
  return delivery.lastError ?? (delivery.attempts ? 'No answer' : '—');
}

export function DeliveryLog({ call, base, automation, refreshKey }) {
  const [status, setStatus] = useState('');
  const [page, setPage] = useState(1);
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  const path = `${base}/${automation.id}/deliveries`;

  const begin = useLatestRequest();
  const load = useCallback(async () => {
    const isLatest = begin();
    try {
      const answer = await call('GET', path, { query: { status, pageNumber: page, pageSize: PAGE_SIZE } });
      if (!isLatest()) return;
      setList(answer);
      setError(null);
    } catch (failure) {
      if (isLatest()) setError(refusalText(failure));
    }
  }, [call, path, status, page]);

  useEffect(() => {
    void load();
  }, [load, refreshKey]);
  const open = list?.data.some((delivery) => delivery.status === 'pending' || delivery.status === 'delivering');
  useEffect(() => {
    if (!open) return;
    const timer = setTimeout(load, 2000);
    return () => clearTimeout(timer);
  }, [open, list, load]);

  const retry = async (delivery) => {
    try {
      await call('POST', `${path}/${delivery.id}/retry`);
      announce('The delivery is queued again');
      await load();
    } catch (failure) {
      setError(refusalText(failure));
    }
  };
  const retryFailed = async () => {
    try {
      const { retried } = await call('POST', `${path}/retry-failed`);
      announce(`${retried} failed ${retried === 1 ? 'delivery' : 'deliveries'} queued again`);
      await load();
    } catch (failure) {
      setError(refusalText(failure));
    }
  };

  return html`<section class="delivery-log card" aria-labelledby="deliveries-heading">
    <div class="section-head">
      <h2 id="deliveries-heading">Deliveries of ${automation.name}</h2>
      <div class="inline-field">
        <button type="button" class="secondary" onClick=${load}>Refresh</button>
        <button type="button" class="secondary" onClick=${retryFailed}>Retry every failed one</button>
      </div>
    </div>
    <label for="delivery-status">Status</label>
    <select id="delivery-status" value=${status} onChange=${(event) => {
      setStatus(event.currentTarget.value);
      setPage(1);
    }}>
      <option value="">Any status</option>
      ${Object.entries(STATUS_WORDS).map(([value, words]) => html`<option value=${value}>${words}</option>`)}
    </select>
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    ${!list ? html`<p>Loading the deliveries…</p>` : !list.data.length ? html`<p class="empty">No deliveries${status ? ' with this status' : ' yet: send a test, or upload a file'}.</p>` : html`
      <div class="table-scroll" tabindex="0" role="region" aria-label="Deliveries">
        <table class="data-table">
          <caption class="visually-hidden">Deliveries, newest first</caption>
          <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th>
            <th scope="col">Occurred</th><th scope="col">Delivered or next attempt</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>${list.data.map((delivery) => html`<tr key=${delivery.id} data-status=${delivery.status}>
            <td>${EVENT_WORDS[delivery.eventKind] ?? delivery.eventKind}</td>
            <td class="delivery-status">${STATUS_WORDS[delivery.status] ?? delivery.status}</td>
            <td>${delivery.attempts}</td>
            <td class="delivery-answer">${answerOf(delivery)}</td>
            <td>${formatDate(delivery.occurredAt)}</td>
            <td>${delivery.deliveredAt ? formatDate(delivery.deliveredAt) : delivery.nextAttemptAt ? `next ${formatDate(delivery.nextAttemptAt)}` : '—'}</td>
            <td>${delivery.status === 'failed' ? html`<button type="button" class="secondary" onClick=${() => retry(delivery)}>Retry<span class="visually-hidden"> this delivery</span></button>` : ''}</td>
          </tr>`)}</tbody>
        </table>
      </div>
      <p class="muted">${list.count} ${list.count === 1 ? 'delivery' : 'deliveries'}</p>`}
    ${list ? html`<${Pager} label="Pages of deliveries" page=${page} pageSize=${PAGE_SIZE} count=${list.count} onPage=${setPage} />` : ''}
  </section>`;
}
