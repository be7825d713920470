import { useEffect, useState } from 'preact/hooks';
import { ConfirmButton } from './confirm-button.js';
import { html } from './html.js';
import { announce } from './notices.js';
import { effectivePermissions } from './permission-names.js';
import { PermissionPicker } from './permission-picker.js';
import { refusalText } from './refusal-words.js';
import { allows, useSession } from './session.js';

// One member as GET /members/{memberId} has it: its groups and effective permissions, and what the
// signed-in member may change: its groups (team.groups.manage), its own permissions and main group,
// removing it from the team (team.members.manage). The owner keeps every permission.

export function MemberEditor({ memberId, groups, onChanged }) {
  const { call, credential, team } = useSession();
  const base = `/v1/teams/${credential.teamId}`;
  const [member, setMember] = useState(null);
  const [ownPermissions, setOwnPermissions] = useState([]);
  const [groupIds, setGroupIds] = useState([]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const canManage = allows(team.permissions, 'team.members.manage');
  const canGroup = allows(team.permissions, 'team.groups.manage');

  const show = (info) => {
    setMember(info);
    setOwnPermissions(info.permissions);
    setGroupIds(info.groups.map((group) => group.id));
  };
  useEffect(() => {
    call('GET', `${base}/members/${memberId}`).then(show, (failure) => setError(refusalText(failure)));
  }, [memberId]);

  const act = async (work, done, { refetch = true } = {}) => {
    setBusy(true);
    setError(null);
    try {
      await work();
      announce(done);
      if (refetch) show(await call('GET', `${base}/members/${memberId}`));
      onChanged();
    } catch (failure) {
      setError(refusalText(failure));
    } finally {
      setBusy(false);
    }
  };

  if (error && !member) return html`<p role="alert" class="error">${error}</p>`;
  if (!member) return html`<p>Loading the member…</p>`;
  const effective = effectivePermissions(member);
  const prefix = `member-${member.id}`;
  return html`<div class="member-editor">
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <dl class="facts">
      <dt>Groups</dt><dd>${member.groups.length ? member.groups.map((group) => group.name).join(', ') : 'none'}</dd>
      <dt>Main group</dt><dd>${member.mainGroup?.name ?? 'none'}</dd>
      <dt>Effective permissions</dt><dd>${member.isTeamOwner ? 'every permission (the owner)' : effective.length ? effective.join(', ') : 'none'}</dd>
    </dl>
    ${canGroup && groups.length ? html`<fieldset class="team-form">
      <legend>Groups of ${member.name}</legend>
      <ul class="permission-list">
        ${groups.map((group) => html`<li key=${group.id}><label class="checkbox" for=${`${prefix}-group-${group.id}`}>
          <input type="checkbox" id=${`${prefix}-group-${group.id}`} checked=${groupIds.includes(group.id)}
            onChange=${(event) => setGroupIds(event.currentTarget.checked ? [...groupIds, group.id] : groupIds.filter((id) => id !== group.id))} />${group.name}</label></li>`)}
      </ul>
      <button type="button" disabled=${busy} onClick=${() => act(() => call('PUT', `${base}/members/${member.id}/groups`, { body: { groupIds } }), 'Groups saved')}>Save groups</button>
    </fieldset>` : ''}
    ${canManage && member.groups.length ? html`<div class="team-form">
      <label for=${`${prefix}-main`}>Main group of ${member.name}</label>
      <div class="inline-field">
        <select id=${`${prefix}-main`} value=${member.mainGroup?.id ?? ''} onChange=${(event) => {
          const mainGroupId = event.currentTarget.value || null;
          act(() => call('PATCH', `${base}/members/${member.id}`, { body: { mainGroupId } }), 'Main group saved');
        }}>
          <option value="">None</option>
          ${member.groups.map((group) => html`<option key=${group.id} value=${group.id}>${group.name}</option>`)}
        </select>
      </div>
    </div>` : ''}
    ${canManage && !member.isTeamOwner ? html`<div class="team-form">
      <${PermissionPicker} legend=${`Own permissions of ${member.name} (besides its groups')`} idPrefix=${`${prefix}-own`}
        selected=${ownPermissions} onChange=${setOwnPermissions} mine=${team.permissions} />
      <button type="button" disabled=${busy} onClick=${() => act(() =>
        call('PATCH', `${base}/members/${member.id}`, { body: { permissions: ownPermissions } }), 'Permissions saved')}>Save permissions</button>
    </div>` : ''}
    ${canManage && !member.isTeamOwner ? html`<${ConfirmButton} label=${`Remove ${member.name} from the team…`} busy=${busy}
      question=${`Remove ${member.name}? Its keys stop working; it can come back through a new invite.`} confirmLabel="Remove member"
      onConfirm=${() => act(() => call('DELETE', `${base}/members/${member.id}`), `${member.name} removed`, { refetch: false })} />` : ''}
  </div>`;
}
