import { useCallback, useEffect, useState } from 'preact/hooks';
import { formatDate } from './format.js';
import { html } from './html.js';
import { useLatestRequest } from './latest-request.js';
import { Pager } from './pager.js';
import { refusalText } from './refusal-words.js';
import { allows, useSession } from './session.js';

// The team log (GET /v1/teams/{teamId}/logs), newest first, paged, with the filters the route
// takes: the action, who acted, and a date range (the browser's days, sent as instants).

const PAGE_SIZE = 25;
// The actions the service writes (src/domain/team-logs/team-log.service.ts), grouped for the picker.
const ACTION_GROUPS = [
  ['Automations', ['AUTOMATION_CREATED', 'AUTOMATION_UPDATED', 'AUTOMATION_DELETED']],
  ['API keys', ['API_KEY_CREATED', 'API_KEY_DELETED']],
  ['Members', ['MEMBER_JOINED', 'MEMBER_LEFT', 'MEMBER_KICKED', 'MEMBER_UPDATED', 'MEMBER_PERMISSIONS_UPDATED', 'MEMBER_NOTE_CREATED', 'MEMBER_NOTE_DELETED']],
  ['Groups', ['GROUP_CREATED', 'GROUP_UPDATED', 'GROUP_DELETED', 'GROUPS_UPDATED', 'MEMBER_GROUP_ADDED', 'MEMBER_GROUP_REMOVED', 'MEMBER_GROUPS_CHANGED']],
  ['Invites', ['INVITE_CREATED', 'INVITE_DELETED', 'INVITES_CLEAR']],
  ['Team', ['TEAM_UPDATED', 'MODULE_ACTIVATED', 'MODULE_DEACTIVATED']],
  ['Files', ['TEAM_FILE_UPLOADED', 'TEAM_FILE_DELETED', 'TODO_FILE_UPLOADED', 'TODO_FILE_DELETED']],
  ['Workspace', ['LOGOFF_CREATED', 'LOGOFF_DELETED', 'PENALTY_POINT_CREATED', 'PENALTY_POINT_DELETED',
    'DOCUMENTATION_RIGHT_CREATED', 'DOCUMENTATION_RIGHT_UPDATED', 'DOCUMENTATION_RIGHT_DELETED', 'DOCUMENTATION_RIGHT_ASSIGNED',
    'DOCUMENTATION_RIGHT_UNASSIGNED', 'DOCUMENTATION_RIGHT_GROUP_ASSIGNED', 'DOCUMENTATION_RIGHT_GROUP_UNASSIGNED']],
];

/** AUTOMATION_CREATED → "Automation created". */
export function actionWords(action) {
  const words = action.toLowerCase().replaceAll('_', ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The entry's data as one line of text (never markup). */
function detailsOf(data) {
  if (!data || typeof data !== 'object') return '';
  return Object.entries(data)
    .map(([key, value]) => `${key}: ${Array.isArray(value) ? value.join(', ') : value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value)}`)
    .join(' · ');
}

/** A local day (yyyy-mm-dd) as the instant it starts, or ends, in the browser's time zone. */
function dayBound(day, end) {
  if (!day) return undefined;
  const date = new Date(`${day}T00:00:00`);
  if (end) {
    date.setDate(date.getDate() + 1);
    date.setMilliseconds(-1);
  }
  return date.toISOString();
}

export function TeamLogView() {
  const { call, credential, team } = useSession();
  const [filters, setFilters] = useState({ action: '', teamMemberId: '', fromDay: '', toDay: '' });
  const [page, setPage] = useState(1);
  const [log, setLog] = useState(null);
  const [members, setMembers] = useState([]);
  const [error, setError] = useState(null);
  const mayListMembers = allows(team?.permissions, 'team.members.view');

  useEffect(() => {
    if (!mayListMembers) return;
    call('GET', `/v1/teams/${credential.teamId}/members`)
      .then((answer) => setMembers(Array.isArray(answer) ? answer : answer?.data ?? []), () => setMembers([]));
  }, [call, credential.teamId, mayListMembers]);

  const begin = useLatestRequest();
  const load = useCallback(async () => {
    const isLatest = begin();
    try {
      const query = { action: filters.action, teamMemberId: filters.teamMemberId, from: dayBound(filters.fromDay, false), to: dayBound(filters.toDay, true) };
      // Paging in the headers: the route takes no query parameter but its filters.
      const headers = { pageNumber: String(page), pageSize: String(PAGE_SIZE) };
      // The pager shows the page whose entries are on screen, not the one asked for while it loads.
      const answer = await call('GET', `/v1/teams/${credential.teamId}/logs`, { query, headers });
      if (!isLatest()) return;
      setLog({ ...answer, page });
      setError(null);
    } catch (failure) {
      if (isLatest()) setError(refusalText(failure));
    }
  }, [call, credential.teamId, filters, page]);
  useEffect(() => {
    void load();
  }, [load]);

  const change = (name) => (event) => {
    const { value } = event.currentTarget;
    setFilters((current) => ({ ...current, [name]: value }));
    setPage(1);
  };
  // Without team.members.view, the actors to filter by are those of the entries shown.
  const actors = members.length ? members : [...new Map((log?.data ?? []).filter((entry) => entry.teamMember).map((entry) => [entry.teamMember.id, entry.teamMember])).values()];

  return html`<div class="team-screen">
    <form class="filters" aria-label="Filter the team log" onSubmit=${(event) => event.preventDefault()}>
      <div class="filter-field"><label for="log-action">Action</label>
        <select id="log-action" value=${filters.action} onChange=${change('action')}>
          <option value="">Any action</option>
          ${ACTION_GROUPS.map(([group, actions]) => html`<optgroup label=${group}>${actions.map((action) => html`<option value=${action}>${actionWords(action)}</option>`)}</optgroup>`)}
        </select></div>
      <div class="filter-field"><label for="log-actor">Who</label>
        <select id="log-actor" value=${filters.teamMemberId} onChange=${change('teamMemberId')}>
          <option value="">Anyone</option>
          ${actors.map((member) => html`<option key=${member.id} value=${member.id}>${member.name}</option>`)}
        </select></div>
      <div class="filter-field"><label for="log-from">From</label><input id="log-from" type="date" value=${filters.fromDay} max=${filters.toDay || undefined} onChange=${change('fromDay')} /></div>
      <div class="filter-field"><label for="log-to">To</label><input id="log-to" type="date" value=${filters.toDay} min=${filters.fromDay || undefined} onChange=${change('toDay')} /></div>
    </form>
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    ${!log ? html`<p>Loading the team log…</p>` : html`
      <p class="result-count" aria-live="polite">${log.count} ${log.count === 1 ? 'entry' : 'entries'}</p>
      ${log.data.length ? html`<div class="table-scroll" tabindex="0" role="region" aria-label="Team log entries"><table class="data-table team-log">
        <caption class="visually-hidden">Team log, newest first</caption>
        <thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">Who</th><th scope="col">Concerning</th><th scope="col">Details</th></tr></thead>
        <tbody>${log.data.map((entry) => html`<tr key=${entry.id}>
          <td>${formatDate(entry.createdAt)}</td>
          <td class="log-action">${actionWords(entry.action)}</td>
          <td>${entry.teamMember?.name ?? (entry.teamMemberId ? 'A former member' : 'The operator')}</td>
          <td>${entry.targetTeamMember?.name ?? entry.targetIdentifier ?? ''}</td>
          <td class="log-details">${detailsOf(entry.data)}</td>
        </tr>`)}</tbody>
      </table></div>` : html`<p class="empty">No entry${filters.action || filters.teamMemberId || filters.fromDay || filters.toDay ? ' matches these filters' : ' yet'}.</p>`}
      <${Pager} label="Pages of the team log" page=${log.page} pageSize=${PAGE_SIZE} count=${log.count} onPage=${setPage} />`}
  </div>`;
}
