import { useEffect, useState } from 'preact/hooks';
import { apiRequest } from './api.js';
import { html } from './html.js';
import { refusalText } from './refusal-words.js';
import { finishProviderSignIn, startProviderSignIn } from './provider-sign-in.js';

// Sign in with a user account (password, or Discord/Google when the service offers them), or with
// a team API key for fleets that have no users.

const PROVIDER_LABELS = { discord: 'Sign in with Discord', google: 'Sign in with Google' };
const TEAM_KEY = /^tws_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/;

export function SignInView({ onSignedIn, reason }) {
  const [providers, setProviders] = useState([]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    const returned = finishProviderSignIn();
    if (returned?.error) setError(returned.error);
    else if (returned) onSignedIn(returned.credential);
    apiRequest(null, 'GET', '/v1/auth/providers')
      .then((answer) => setProviders(answer.providers.filter((provider) => provider.type === 'oauth').map((provider) => provider.id)))
      .catch(() => setProviders([]));
  }, []);

  const attempt = async (work) => {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (failure) {
      setError(failure.status === 401 ? 'That did not work: check what you typed.' : refusalText(failure));
    } finally {
      setBusy(false);
    }
  };

  const signInWithPassword = (event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    return attempt(async () => {
      const answer = await apiRequest(null, 'POST', '/v1/auth/sign-in', { body: { login: form.get('login'), password: form.get('password') } });
      onSignedIn({ kind: 'session', token: answer.token, expiresAt: answer.expiresAt, username: answer.user.username });
    });
  };

  // The key alone: GET /v1/auth/key says which team it belongs to.
  const signInWithKey = (event) => {
    event.preventDefault();
    const key = String(new FormData(event.currentTarget).get('apiKey')).trim();
    if (!TEAM_KEY.test(key)) return setError('A team API key looks like tws_ followed by 16 hex digits, _ and 43 more characters.');
    return attempt(async () => {
      const identity = await apiRequest(key, 'GET', '/v1/auth/key');
      if (identity.scopes.length > 0) {
        setError('This key can only upload files (its scope is media:upload): sign in with a full key of the team.');
        return;
      }
      onSignedIn({ kind: 'key', token: key, teamId: identity.teamId });
    });
  };

  const signInWithProvider = (provider) => attempt(() => startProviderSignIn(provider));

  return html`<main id="main" class="narrow-page sign-in">
    <h1>Sign in to the media dashboard</h1>
    ${reason ? html`<p role="status" class="muted">${reason}</p>` : ''}
    ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
    <section aria-labelledby="password-heading" class="card">
      <h2 id="password-heading">With your account</h2>
      <form onSubmit=${signInWithPassword}>
        <label for="login">Email or username</label>
        <input id="login" name="login" autocomplete="username" required />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required />
        <button type="submit" disabled=${busy}>Sign in</button>
      </form>
      ${providers.length ? html`<div class="providers">
        ${providers.map((provider) => html`<button type="button" class="secondary" key=${provider} disabled=${busy}
          onClick=${() => signInWithProvider(provider)}>${PROVIDER_LABELS[provider] ?? `Sign in with ${provider}`}</button>`)}
      </div>` : ''}
    </section>
    <section aria-labelledby="key-heading" class="card">
      <h2 id="key-heading">With a team API key</h2>
      <p class="muted">For fleets without user accounts: the key alone opens its team. It stays in this tab only, and is forgotten when it closes.</p>
      <form onSubmit=${signInWithKey}>
        <label for="api-key">API key</label>
        <input id="api-key" name="apiKey" type="password" autocomplete="off" spellcheck="false" required />
        <button type="submit" disabled=${busy}>Open the team</button>
      </form>
    </section>
  </main>`;
}
