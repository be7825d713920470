import { useCallback, useEffect, useState } from 'preact/hooks';
import { ConfirmButton } from './confirm-button.js';
import { copyText } from './copy-text.js';
import { formatDate } from './format.js';
import { html } from './html.js';
import { announce } from './notices.js';
import { refusalText } from './refusal-words.js';
import { useSession } from './session.js';

// Invites into the team's groups (team.invites.manage): create one (its group, single or multi
// use, how many days it lasts: the API's options), copy its link, revoke it; the pending ones
// are listed (used and expired ones are not). The link opens the dashboard's join page.

const DAY_MS = 86_400_000;

export function inviteLink(inviteId) {
  return `${location.origin}/app/invite/${inviteId}`;
}

function isPending(invite, now) {
  return !invite.isUsed && new Date(invite.expireDate).getTime() > now;
}

function CreateInviteForm({ groups, onCreated }) {
  const { call, credential } = useSession();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const submit = async (event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const days = Number(form.get('days'));
    const body = { groupId: String(form.get('group')), isMultiUse: form.get('multiUse') === 'on', expireDate: new Date(Date.now() + days * DAY_MS).toISOString() };
    setBusy(true);
    setError(null);
    try {
      onCreated(await call('POST', `/v1/teams/${credential.teamId}/invites`, { body }));
    } catch (failure) {
      setError(failure.messageKey === 'error.teamLimits.multiUseInvites' ? 'The team\'s plan does not allow multi-use invites: make a single-use one.' : refusalText(failure));
    } finally {
      setBusy(false);
    }
  };
  if (groups && groups.length === 0) return html`<p class="card">The team has no group yet: an invite puts its new member in a group. Create one under Members first.</p>`;
  return html`<form class="card team-form" onSubmit=${submit} aria-labelledby="create-invite-title">
    <h2 id="create-invite-title">Create an invite</h2>
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <label for="invite-group">Group the new member joins</label>
    <select id="invite-group" name="group" required>
      ${(groups ?? []).map((group) => html`<option key=${group.id} value=${group.id}>${group.name}</option>`)}
    </select>
    <label for="invite-days">Valid for (days, 1 to 365)</label>
    <input id="invite-days" name="days" type="number" min="1" max="365" value="7" required />
    <label class="checkbox" for="invite-multi"><input id="invite-multi" name="multiUse" type="checkbox" /> Several people may use it (multi-use)</label>
    <button type="submit" disabled=${busy || !groups}>Create invite</button>
  </form>`;
}

export function InvitesView() {
  const { call, credential } = useSession();
  const base = `/v1/teams/${credential.teamId}`;
  const [invites, setInvites] = useState(null);
  const [groups, setGroups] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);

  const load = useCallback(() => call('GET', `${base}/invites`).then(setInvites, (failure) => setError(refusalText(failure))), [call, base]);
  useEffect(() => {
    load();
    call('GET', `${base}/groups`).then(setGroups, (failure) => setError(failure.status === 403
      ? 'You may not list the team\'s groups (team.members.view), so you cannot choose one for an invite.' : refusalText(failure)));
  }, [load]);

  const revoke = async (invite) => {
    setBusy(true);
    try {
      await call('DELETE', `${base}/invites/${invite.id}`);
      announce('Invite revoked');
      await load();
    } catch (failure) {
      setError(refusalText(failure));
    } finally {
      setBusy(false);
    }
  };

  const now = Date.now();
  const pending = (invites ?? []).filter((invite) => isPending(invite, now));
  const groupName = (id) => groups?.find((group) => group.id === id)?.name ?? 'a group';
  return html`<div class="team-view">
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <section class="card" aria-labelledby="invites-title">
      <h2 id="invites-title">Pending invites</h2>
      ${!invites ? html`<p>Loading the invites…</p>` : pending.length === 0 ? html`<p class="empty">No pending invite.</p>` : html`
        <ul class="team-list-rows">
          ${pending.map((invite) => html`<li key=${invite.id} class="team-row">
            <div class="team-row-main">
              <p class="team-row-name">Into ${groupName(invite.groupId)}</p>
              <p class="muted">${invite.isMultiUse ? 'Multi-use' : 'Single use'} · created ${formatDate(invite.createdAt)} · expires ${formatDate(invite.expireDate)}</p>
              <label for=${`invite-link-${invite.id}`} class="visually-hidden">Link of the invite into ${groupName(invite.groupId)}</label>
              <input id=${`invite-link-${invite.id}`} class="link-field" readonly value=${inviteLink(invite.id)} onFocus=${(event) => event.currentTarget.select()} />
            </div>
            <div class="team-row-actions">
              <button type="button" onClick=${() => copyText(inviteLink(invite.id), 'Invite link')}>Copy link</button>
              <${ConfirmButton} label="Revoke…" question="Revoke this invite? Its link stops working." confirmLabel="Revoke invite" busy=${busy} onConfirm=${() => revoke(invite)} />
            </div>
          </li>`)}
        </ul>`}
      ${invites && invites.length > pending.length ? html`<p class="muted">${invites.length - pending.length} used or expired not shown.</p>` : ''}
    </section>
    <${CreateInviteForm} groups=${groups} onCreated=${(invite) => {
      announce(`Invite into ${groupName(invite.groupId)} created`);
      load();
    }} />
  </div>`;
}
