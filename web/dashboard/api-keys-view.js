import { useCallback, useEffect, useState } from 'preact/hooks';
import { ConfirmButton } from './confirm-button.js';
import { formatDate } from './format.js';
import { html } from './html.js';
import { announce } from './notices.js';
import { refusalText } from './refusal-words.js';
import { SecretOnce } from './secret-once.js';
import { allows, useSession } from './session.js';

// The team's API keys (team.apiKeys.manage): list, create (linked to a member, whose permissions it
// gets, or to none: it acts as the owner; full or upload-only), reroll, delete. The secret is shown
// once, after creation or reroll. The API refuses a key stronger than the signed-in member.

const SCOPES = { full: 'Full key (every route its permissions allow)', upload: 'Uploads only (scope media:upload)' };

function CreateKeyForm({ members, onCreated }) {
  const { call, credential } = useSession();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const submit = async (event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const body = { description: String(form.get('description')).trim() || undefined };
    if (form.get('member')) body.teamMemberId = String(form.get('member'));
    if (form.get('scope') === 'upload') body.scopes = ['media:upload'];
    setBusy(true);
    setError(null);
    try {
      onCreated(await call('POST', `/v1/teams/${credential.teamId}/api-keys`, { body }));
      event.target.reset();
    } catch (failure) {
      setError(refusalText(failure));
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card team-form" onSubmit=${submit} aria-labelledby="create-key-title">
    <h2 id="create-key-title">Create a key</h2>
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <label for="key-description">Description</label>
    <input id="key-description" name="description" maxlength="255" placeholder="eu-1 game server" />
    <label for="key-member">Acts as</label>
    <select id="key-member" name="member">
      <option value="">No member: the owner (every permission)</option>
      ${(members ?? []).map((member) => html`<option key=${member.id} value=${member.id}>${member.name}</option>`)}
    </select>
    <p class="muted">${members ? 'The key gets that member\'s permissions and its groups\', as they change.' : 'You may not list members: the key will act as the owner.'}</p>
    <label for="key-scope">Scope</label>
    <select id="key-scope" name="scope">
      ${Object.entries(SCOPES).map(([value, label]) => html`<option key=${value} value=${value}>${label}</option>`)}
    </select>
    <button type="submit" disabled=${busy}>Create key</button>
  </form>`;
}

export function ApiKeysView() {
  const { call, credential, team } = useSession();
  const base = `/v1/teams/${credential.teamId}`;
  const [keys, setKeys] = useState(null);
  const [members, setMembers] = useState(null);
  const [secret, setSecret] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);

  const load = useCallback(() => call('GET', `${base}/api-keys`).then(setKeys, (failure) => setError(refusalText(failure))), [call, base]);
  useEffect(() => {
    load();
    if (allows(team.permissions, 'team.members.view')) {
      call('GET', `${base}/members`, { query: { pageSize: 500 } }).then((answer) => setMembers(answer.data), () => setMembers(null));
    }
  }, [load]);

  const act = async (work, done) => {
    setBusy(true);
    setError(null);
    try {
      await work();
      if (done) announce(done);
      await load();
    } catch (failure) {
      setError(refusalText(failure));
    } finally {
      setBusy(false);
    }
  };
  const nameOf = (key) => key.description || 'Key without a description';

  return html`<div class="team-view">
    ${secret ? html`<${SecretOnce} title=${secret.title} secret=${secret.key} onDone=${() => setSecret(null)} />` : ''}
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <section class="card" aria-labelledby="keys-title">
      <h2 id="keys-title">Keys of the team</h2>
      ${!keys ? html`<p>Loading the keys…</p>` : keys.length === 0 ? html`<p class="empty">No keys yet.</p>` : html`
        <ul class="team-list-rows">
          ${keys.map((key) => html`<li key=${key.id} class="team-row">
            <div class="team-row-main">
              <p class="team-row-name">${nameOf(key)}</p>
              <p class="muted">${key.teamMember ? `Acts as ${key.teamMember.name}` : 'Acts as the owner'} · ${key.scopes.length ? 'uploads only' : 'full key'}
                · created ${formatDate(key.createdAt)}${key.updatedAt !== key.createdAt ? ` · changed ${formatDate(key.updatedAt)}` : ''}</p>
            </div>
            <div class="team-row-actions">
              <${ConfirmButton} label=${`Reroll ${nameOf(key)}…`} question="A new secret; the current one stops working at once." confirmLabel="Reroll key" busy=${busy}
                onConfirm=${() => act(async () => {
                  const rerolled = await call('POST', `${base}/api-keys/${key.id}/reroll`);
                  setSecret({ title: `New secret of ${nameOf(key)}`, key: rerolled.key });
                }, 'Key rerolled')} />
              <${ConfirmButton} label=${`Delete ${nameOf(key)}…`} question="Delete this key? Servers using it stop working at once." confirmLabel="Delete key" busy=${busy}
                onConfirm=${() => act(() => call('DELETE', `${base}/api-keys/${key.id}`), 'Key deleted')} />
            </div>
          </li>`)}
        </ul>`}
    </section>
    <${CreateKeyForm} members=${members} onCreated=${(created) => {
      setSecret({ title: `Secret of ${nameOf(created)}`, key: created.key });
      announce('Key created');
      load();
    }} />
  </div>`;
}
