import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';
import { refusalText } from './refusal-words.js';
import { useSession } from './session.js';

// A user in several teams picks one (a user in exactly one goes straight to it).

export function TeamPicker() {
  const { call, chooseTeam, signOut, credential } = useSession();
  const [teams, setTeams] = useState(null);
  const [error, setError] = useState(null);

  useEffect(() => {
    call('GET', '/v1/users/me/teams')
      .then((memberships) => {
        if (memberships.length === 1 && !credential.teamId) chooseTeam(memberships[0].team.id);
        else setTeams(memberships);
      })
      .catch((failure) => setError(refusalText(failure)));
  }, []);

  return html`<main id="main" class="narrow-page">
    <h1>Choose a team</h1>
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    ${teams === null && !error ? html`<p>Loading your teams…</p>` : ''}
    ${teams?.length === 0 ? html`<p>You are not a member of any team yet. Ask a team owner for an invite.</p>` : ''}
    ${teams?.length ? html`<ul class="team-list">
      ${teams.map((membership) => html`<li key=${membership.team.id}>
        <button type="button" class="team-choice" aria-current=${membership.team.id === credential.teamId ? 'true' : undefined}
          onClick=${() => chooseTeam(membership.team.id)}>
          <span class="team-choice-name">${membership.team.name}</span>
          <span class="muted">as ${membership.name}${membership.isTeamOwner ? ' (owner)' : ''}</span>
        </button>
      </li>`)}
    </ul>` : ''}
    <p><button type="button" class="secondary" onClick=${signOut}>Sign out</button></p>
  </main>`;
}
