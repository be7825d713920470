import { useEffect, useState } from 'preact/hooks';
import { formatBytes } from './format.js';
import { html } from './html.js';
import { useSession } from './session.js';

// The team's usage (GET /v1/cdn/media/{teamId}/usage?days=30): storage against the plan, by kind;
// uploads and served traffic per day as bar charts, each with its numbers as a table; the plan's
// limits. The charts are SVG drawn here: a few dozen rectangles need no charting library.

const DAYS = 30;
const dayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const number = new Intl.NumberFormat();

function dayOf(date) {
  return dayFormat.format(new Date(`${date}T00:00:00Z`));
}

function Storage({ storage }) {
  const { usedBytes, limitBytes } = storage;
  const kinds = [['Media', storage.mediaBytes], ['Team files', storage.teamFileBytes], ['To-do files', storage.todoFileBytes]];
  const share = limitBytes ? Math.min(100, (usedBytes / limitBytes) * 100) : null;
  return html`<section class="usage-section" aria-labelledby="usage-storage">
    <h2 id="usage-storage">Storage</h2>
    <p class="usage-total">${formatBytes(usedBytes)} used${limitBytes ? ` of ${formatBytes(limitBytes)} (${share.toFixed(share < 10 ? 1 : 0)} %)` : ' (no limit)'}</p>
    ${limitBytes ? html`<meter class="usage-meter" min="0" max=${limitBytes} value=${usedBytes} low=${limitBytes * 0.8} high=${limitBytes * 0.95}
      optimum="0" aria-label="Storage used of the plan's limit">${share.toFixed(0)} %</meter>` : ''}
    <dl class="facts">
      ${kinds.map(([label, bytes]) => html`<dt>${label}</dt><dd>${formatBytes(bytes)}</dd>`)}
      <dt>Largest file</dt><dd>${storage.maxFileSizeBytes ? formatBytes(storage.maxFileSizeBytes) : 'no limit'}</dd>
    </dl>
  </section>`;
}

/** One bar per day, scaled to the largest; the table under it says the same in numbers. */
function DailyChart({ id, title, days, value, format }) {
  const width = 600;
  const height = 120;
  const largest = Math.max(1, ...days.map(value));
  const slot = width / days.length;
  const total = days.reduce((sum, day) => sum + value(day), 0);
  return html`<section class="usage-section" aria-labelledby=${id}>
    <h2 id=${id}>${title}</h2>
    <p class="usage-total">${format(total)} in the last ${days.length} days</p>
    <svg class="usage-chart" viewBox=${`0 0 ${width} ${height}`} preserveAspectRatio="none" role="img" aria-label=${`${title}, one bar per day; the table below has the numbers`}>
      ${days.map((day, index) => {
        const barHeight = (value(day) / largest) * (height - 2);
        return html`<rect x=${index * slot + 1} y=${height - barHeight} width=${Math.max(1, slot - 2)} height=${barHeight}>
          <title>${dayOf(day.date)}: ${format(value(day))}</title></rect>`;
      })}
    </svg>
    <details>
      <summary>${title} per day</summary>
      <table class="usage-table">
        <thead><tr><th scope="col">Day (UTC)</th><th scope="col">${title}</th></tr></thead>
        <tbody>${[...days].reverse().map((day) => html`<tr><td>${dayOf(day.date)}</td><td>${format(value(day))}</td></tr>`)}</tbody>
      </table>
    </details>
  </section>`;
}

function Limits({ limits }) {
  const entries = Object.entries(limits ?? {}).filter(([, value]) => value !== '' && value !== undefined);
  const shown = (value) => (value === null ? 'no limit' : typeof value === 'boolean' ? (value ? 'yes' : 'no') : number.format(value));
  return html`<section class="usage-section" aria-labelledby="usage-limits">
    <h2 id="usage-limits">Plan limits</h2>
    <dl class="facts limits">${entries.map(([name, value]) => html`<dt>${name}</dt><dd>${shown(value)}</dd>`)}</dl>
  </section>`;
}

export function UsageView() {
  const { call, credential } = useSession();
  const [usage, setUsage] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    call('GET', `/v1/cdn/media/${credential.teamId}/usage`, { query: { days: DAYS } })
      .then(setUsage, (failure) => setError(failure.message));
  }, [call, credential.teamId]);
  if (error) return html`<p role="alert" class="error">${error}</p>`;
  if (!usage) return html`<p>Loading the team's usage…</p>`;
  return html`<div class="usage">
    <${Storage} storage=${usage.storage} />
    <${DailyChart} id="usage-uploads" title="Uploads" days=${usage.uploads} value=${(day) => day.uploads} format=${(n) => number.format(n)} />
    <${DailyChart} id="usage-upload-bytes" title="Uploaded bytes" days=${usage.uploads} value=${(day) => day.bytes} format=${formatBytes} />
    <${DailyChart} id="usage-served" title="Served traffic" days=${usage.served} value=${(day) => day.bytes} format=${formatBytes} />
    <${Limits} limits=${usage.limits} />
  </div>`;
}
