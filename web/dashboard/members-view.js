import { useCallback, useEffect, useState } from 'preact/hooks';
import { GroupsPanel } from './groups-panel.js';
import { html } from './html.js';
import { MemberEditor } from './member-editor.js';
import { refusalText } from './refusal-words.js';
import { useSession } from './session.js';

// Members and groups (team.members.view): every current member with its main group and own
// permissions; opening one shows its groups and effective permissions, with the changes the
// signed-in member may make. The groups below, with their permissions.

const PAGE_SIZE = 500;

export function MembersView() {
  const { call, credential } = useSession();
  const base = `/v1/teams/${credential.teamId}`;
  const [members, setMembers] = useState(null);
  const [groups, setGroups] = useState(null);
  const [open, setOpen] = useState(null);
  const [error, setError] = useState(null);

  const load = useCallback(() => Promise.all([
    call('GET', `${base}/members`, { query: { pageSize: PAGE_SIZE } }),
    call('GET', `${base}/groups`),
  ]).then(([list, groupList]) => {
    setMembers(list);
    setGroups(groupList);
  }, (failure) => setError(refusalText(failure))), [call, base]);
  useEffect(() => {
    load();
  }, [load]);

  if (error) return html`<p role="alert" class="error">${error}</p>`;
  if (!members || !groups) return html`<p>Loading the members…</p>`;
  return html`<div class="team-view">
    <section class="card" aria-labelledby="members-title">
      <h2 id="members-title">Members</h2>
      <p class="muted">${members.count} ${members.count === 1 ? 'member' : 'members'}${members.count > members.data.length ? `, the first ${members.data.length} shown` : ''}</p>
      <ul class="team-list-rows">
        ${members.data.map((member) => html`<li key=${member.id} class="team-row">
          <div class="team-row-main">
            <p class="team-row-name">${member.name}${member.isTeamOwner ? html` <span class="badge">Owner</span>` : ''}</p>
            <p class="muted">${member.mainGroup ? `Main group ${member.mainGroup.name}` : 'No main group'} · ${member.isTeamOwner
              ? 'every permission' : `${member.permissions.length} own ${member.permissions.length === 1 ? 'permission' : 'permissions'}`}</p>
            ${open === member.id ? html`<${MemberEditor} memberId=${member.id} groups=${groups} onChanged=${load} />` : ''}
          </div>
          <div class="team-row-actions">
            <button type="button" class="secondary" aria-expanded=${open === member.id} onClick=${() => setOpen(open === member.id ? null : member.id)}>
              ${open === member.id ? `Close ${member.name}` : `Open ${member.name}`}</button>
          </div>
        </li>`)}
      </ul>
    </section>
    <${GroupsPanel} groups=${groups} members=${members.data} onChanged=${load} />
  </div>`;
}
