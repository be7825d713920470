import { useCallback, useEffect, useState } from 'preact/hooks';
import { AutomationForm } from './automation-form.js';
import { DeliveryLog } from './delivery-log.js';
import { useFolders } from './folders.js';
import { formatDate } from './format.js';
import { html } from './html.js';
import { announce } from './notices.js';
import { refusalText } from './refusal-words.js';
import { Link, navigate, useRoute } from './router.js';
import { allows, useSession } from './session.js';

// The team's automations (GET/POST/PATCH/DELETE /v1/teams/{teamId}/automations): each with a
// test message, enable or disable, delete, and its delivery log at /app/automations/<id>.

const KIND_WORDS = { webhook: 'Webhook', discord: 'Discord' };
const NO_FOLDERS = async () => ({ folders: [] });

function Automation({ automation, selected, call, base, onChanged, onTested }) {
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [error, setError] = useState(null);
  const act = async (work) => {
    setError(null);
    try {
      await work();
    } catch (failure) {
      setError(refusalText(failure));
    }
  };
  const test = () => act(async () => {
    await call('POST', `${base}/${automation.id}/test`);
    announce(`Test message queued for ${automation.name}`);
    onTested(automation);
  });
  const toggle = () => act(async () => {
    const changed = await call('PATCH', `${base}/${automation.id}`, { body: { enabled: !automation.enabled } });
    announce(`${automation.name} ${changed.enabled ? 'enabled' : 'disabled'}`);
    onChanged();
  });
  const remove = () => act(async () => {
    await call('DELETE', `${base}/${automation.id}`);
    announce(`${automation.name} deleted`);
    if (selected) navigate('/app/automations');
    onChanged();
  });
  return html`<li class="automation card" data-selected=${selected ? 'true' : 'false'}>
    <div class="automation-head">
      <h3 class="automation-name">${automation.name}</h3>
      <span class="badge" data-tone=${automation.enabled ? 'on' : 'off'}>${automation.enabled ? 'Enabled' : 'Disabled'}</span>
    </div>
    <dl class="facts">
      <dt>Kind</dt><dd>${KIND_WORDS[automation.kind] ?? automation.kind}</dd>
      <dt>Address</dt><dd class="automation-url">${automation.url}</dd>
      <dt>Sends</dt><dd>${automation.eventKinds.join(', ')}${automation.folderId ? ' · one folder' : ''}${automation.tags.length ? ` · tags ${automation.tags.join(', ')}` : ''}</dd>
      <dt>Created</dt><dd>${formatDate(automation.createdAt)}</dd>
    </dl>
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <div class="inline-field">
      <button type="button" onClick=${test} disabled=${!automation.enabled} title=${automation.enabled ? undefined : 'Enable it to send a test'}>Send a test<span class="visually-hidden"> to ${automation.name}</span></button>
      <${Link} href=${`/app/automations/${automation.id}`} aria-current=${selected ? 'true' : undefined}>Deliveries<span class="visually-hidden"> of ${automation.name}</span></${Link}>
      <button type="button" class="secondary" onClick=${toggle}>${automation.enabled ? 'Disable' : 'Enable'}<span class="visually-hidden"> ${automation.name}</span></button>
      ${confirmDelete
        ? html`<span class="confirm">Delete ${automation.name} and its deliveries?
            <button type="button" class="danger" onClick=${remove}>Delete automation</button>
            <button type="button" class="secondary" onClick=${() => setConfirmDelete(false)}>Keep it</button></span>`
        : html`<button type="button" class="secondary" onClick=${() => setConfirmDelete(true)}>Delete…<span class="visually-hidden"> ${automation.name}</span></button>`}
    </div>
  </li>`;
}

export function AutomationsView() {
  const { call, credential, team } = useSession();
  const base = `/v1/teams/${credential.teamId}/automations`;
  const path = useRoute();
  const selectedId = path.split('/')[3] ?? null;
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  const [refreshKey, setRefreshKey] = useState(0);
  // The folder filter needs the folder list, which needs team.media.view.
  const mayViewMedia = allows(team?.permissions, 'team.media.view');
  const folders = useFolders(mayViewMedia ? call : NO_FOLDERS, credential.teamId);

  const load = useCallback(async () => {
    try {
      setList((await call('GET', base)).data);
      setError(null);
    } catch (failure) {
      setError(refusalText(failure));
    }
  }, [call, base]);
  useEffect(() => {
    void load();
  }, [load]);

  const selected = list?.find((automation) => automation.id === selectedId) ?? null;
  return html`<div class="team-screen">
    <p class="lead">Send the team's events to a webhook or a Discord channel. Each delivery is signed, retried, and listed below its automation.</p>
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <${AutomationForm} call=${call} base=${base} folders=${mayViewMedia ? folders.folders : null} onCreated=${load} />
    <section aria-labelledby="automations-heading">
      <h2 id="automations-heading">Automations</h2>
      ${!list ? html`<p>Loading the automations…</p>` : !list.length ? html`<p class="empty">No automation yet.</p>` : html`
        <ul class="automation-list">
          ${list.map((automation) => html`<${Automation} key=${automation.id} automation=${automation} selected=${automation.id === selectedId}
            call=${call} base=${base} onChanged=${load} onTested=${(tested) => {
              navigate(`/app/automations/${tested.id}`);
              setRefreshKey((key) => key + 1);
            }} />`)}
        </ul>`}
    </section>
    ${selected ? html`<${DeliveryLog} key=${selected.id} call=${call} base=${base} automation=${selected} refreshKey=${refreshKey} />` : ''}
    ${selectedId && list && !selected ? html`<p class="error" role="alert">This automation does not exist any more.</p>` : ''}
  </div>`;
}
