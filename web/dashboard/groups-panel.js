import { useState } from 'preact/hooks';
import { ConfirmButton } from './confirm-button.js';
import { html } from './html.js';
import { announce } from './notices.js';
import { PermissionPicker } from './permission-picker.js';
import { refusalText } from './refusal-words.js';
import { allows, useSession } from './session.js';

// The team's groups: each with its permissions; with team.groups.manage, create, rename, change
// permissions, add a member, delete. Names are 2-24 characters (the API's rule).

function useAction(onChanged) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async (work, done) => {
    setBusy(true);
    setError(null);
    try {
      await work();
      announce(done);
      onChanged();
      return true;
    } catch (failure) {
      setError(refusalText(failure));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

function GroupEditor({ group, members, onChanged }) {
  const { call, credential, team } = useSession();
  const base = `/v1/teams/${credential.teamId}/groups/${group.id}`;
  const [name, setName] = useState(group.name);
  const [permissions, setPermissions] = useState(group.permissions);
  const [memberId, setMemberId] = useState('');
  const { busy, error, run } = useAction(onChanged);
  const prefix = `group-${group.id}`;
  return html`<div class="group-editor">
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <form class="team-form" onSubmit=${(event) => {
      event.preventDefault();
      run(() => call('PATCH', base, { body: { name: name.trim(), permissions } }), 'Group saved');
    }}>
      <label for=${`${prefix}-name`}>Name of the group</label>
      <input id=${`${prefix}-name`} value=${name} minlength="2" maxlength="24" required onInput=${(event) => setName(event.currentTarget.value)} />
      <${PermissionPicker} legend=${`Permissions of ${group.name}`} idPrefix=${`${prefix}-perm`} selected=${permissions} onChange=${setPermissions} mine=${team.permissions} />
      <button type="submit" disabled=${busy}>Save group</button>
    </form>
    ${members.length ? html`<div class="team-form">
      <label for=${`${prefix}-add`}>Add a member to ${group.name}</label>
      <div class="inline-field">
        <select id=${`${prefix}-add`} value=${memberId} onChange=${(event) => setMemberId(event.currentTarget.value)}>
          <option value="">Choose a member</option>
          ${members.map((member) => html`<option key=${member.id} value=${member.id}>${member.name}</option>`)}
        </select>
        <button type="button" disabled=${busy || !memberId} onClick=${async () => {
          const added = members.find((member) => member.id === memberId);
          if (await run(() => call('PUT', `${base}/members/${memberId}`), `${added?.name ?? 'Member'} added to ${group.name}`)) setMemberId('');
        }}>Add member</button>
      </div>
    </div>` : ''}
    <${ConfirmButton} label=${`Delete ${group.name}…`} question=${`Delete ${group.name}? Its members lose its permissions.`} confirmLabel="Delete group" busy=${busy}
      onConfirm=${() => run(() => call('DELETE', base), `${group.name} deleted`)} />
  </div>`;
}

function CreateGroupForm({ onChanged }) {
  const { call, credential, team } = useSession();
  const [name, setName] = useState('');
  const [permissions, setPermissions] = useState([]);
  const { busy, error, run } = useAction(onChanged);
  return html`<form class="card team-form" aria-labelledby="create-group-title" onSubmit=${async (event) => {
    event.preventDefault();
    const created = name.trim();
    if (await run(() => call('POST', `/v1/teams/${credential.teamId}/groups`, { body: { name: created, permissions } }), `Group ${created} created`)) {
      setName('');
      setPermissions([]);
    }
  }}>
    <h2 id="create-group-title">Create a group</h2>
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <label for="new-group-name">Name of the new group</label>
    <input id="new-group-name" value=${name} minlength="2" maxlength="24" required onInput=${(event) => setName(event.currentTarget.value)} />
    <${PermissionPicker} legend="Permissions of the new group" idPrefix="new-group" selected=${permissions} onChange=${setPermissions} mine=${team.permissions} />
    <button type="submit" disabled=${busy}>Create group</button>
  </form>`;
}

export function GroupsPanel({ groups, members, onChanged }) {
  const { team } = useSession();
  const [open, setOpen] = useState(null);
  const canManage = allows(team.permissions, 'team.groups.manage');
  return html`<section class="card" aria-labelledby="groups-title">
      <h2 id="groups-title">Groups</h2>
      ${groups.length === 0 ? html`<p class="empty">No groups yet.</p>` : html`<ul class="team-list-rows">
        ${groups.map((group) => html`<li key=${group.id} class="team-row">
          <div class="team-row-main">
            <p class="team-row-name"><svg class="group-colour" viewBox="0 0 10 10" aria-hidden="true"><circle cx="5" cy="5" r="5" fill=${group.color} /></svg>${group.name}</p>
            <p class="muted">${group.permissions.length ? group.permissions.join(', ') : 'no permissions'}</p>
            ${open === group.id ? html`<${GroupEditor} key=${`${group.id}-${group.updatedAt}`} group=${group} members=${members} onChanged=${onChanged} />` : ''}
          </div>
          ${canManage ? html`<div class="team-row-actions">
            <button type="button" class="secondary" aria-expanded=${open === group.id} onClick=${() => setOpen(open === group.id ? null : group.id)}>
              ${open === group.id ? `Close ${group.name}` : `Edit ${group.name}`}</button>
          </div>` : ''}
        </li>`)}
      </ul>`}
    </section>
    ${canManage ? html`<${CreateGroupForm} onChanged=${onChanged} />` : ''}`;
}
