import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';
import { refusalText } from './refusal-words.js';
import { useSession } from './session.js';

// Where an invite link leads (/app/invite/{inviteId}): the signed-in user sees the team it invites
// into and joins it (POST /v1/invites/{inviteId}/accept), then the team opens. A team key cannot
// join anything: an invite is for a person.

const INVITE_PATH = /^\/app\/invite\/([0-9a-f-]{36})$/i;

export function inviteIdOf(path) {
  return INVITE_PATH.exec(path)?.[1] ?? null;
}

const REQUIREMENT_LABELS = { discord: 'a linked Discord account', google: 'a linked Google account', minecraft: 'a linked Minecraft account', hytale: 'a linked Hytale account' };

export function JoinView({ inviteId }) {
  const { call, credential, chooseTeam, signOut } = useSession();
  const [team, setTeam] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (credential.kind !== 'session') return;
    call('GET', `/v1/invites/${inviteId}`).then(setTeam, (failure) => setError(failure.status === 404
      ? 'This invite does not exist any more: it was used, revoked or has expired. Ask for a new one.' : refusalText(failure)));
  }, [inviteId]);

  const join = async (event) => {
    event.preventDefault();
    const name = String(new FormData(event.currentTarget).get('name')).trim();
    setBusy(true);
    setError(null);
    try {
      const member = await call('POST', `/v1/invites/${inviteId}/accept`, { body: name ? { name } : {} });
      chooseTeam(member.teamId);
    } catch (failure) {
      setError(failure.status === 409 ? 'You are a member of this team already, or that member name is taken.' : refusalText(failure));
    } finally {
      setBusy(false);
    }
  };

  const required = Object.entries(team?.requirements ?? {}).filter(([, needed]) => needed).map(([name]) => REQUIREMENT_LABELS[name] ?? name);
  return html`<main id="main" class="narrow-page">
    <h1>Join a team</h1>
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    ${credential.kind !== 'session' ? html`<p>An invite is for a person: sign out, then sign in with your account to join.</p>
      <button type="button" onClick=${signOut}>Sign out</button>` : !team ? (error ? '' : html`<p>Opening the invite…</p>`) : html`<form class="card" onSubmit=${join}>
      <p>You are invited into <strong>${team.name}</strong>.</p>
      ${required.length ? html`<p class="muted">The team asks for ${required.join(', ')}.</p>` : ''}
      <label for="join-name">Your name in the team (optional, 3-20 of a-z A-Z 0-9 _)</label>
      <input id="join-name" name="name" pattern="[a-zA-Z0-9_]{3,20}" autocomplete="nickname" />
      <button type="submit" disabled=${busy}>Join ${team.name}</button>
    </form>`}
  </main>`;
}
