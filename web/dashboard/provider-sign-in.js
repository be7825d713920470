import { apiRequest } from './api.js';

// Discord and Google sign-in (docs/accounts.md): the service sends the browser to the provider and
// back to /app/sign-in with the session token in the address's fragment (never sent to a server,
// never in Referer). `clientState`, kept in this tab, proves the round was started here (login CSRF).

const STATE_KEY = 'media-dashboard.oauth-state';

export async function startProviderSignIn(provider) {
  const clientState = randomState();
  sessionStorage.setItem(STATE_KEY, clientState);
  const returnTo = `${location.origin}/app/sign-in`;
  const { authorizationUrl } = await apiRequest(null, 'POST', `/v1/auth/oauth/${encodeURIComponent(provider)}/start`, { body: { returnTo, clientState } });
  location.assign(authorizationUrl);
}

/** The credential a provider round brought back in the fragment, an error, or null when there was none. */
export function finishProviderSignIn() {
  if (!location.hash.includes('token=')) return null;
  const fragment = new URLSearchParams(location.hash.slice(1));
  history.replaceState(null, '', location.pathname);
  const expected = sessionStorage.getItem(STATE_KEY);
  sessionStorage.removeItem(STATE_KEY);
  if (!expected || fragment.get('clientState') !== expected) {
    return { error: 'That sign-in was not started from this page, so it was ignored. Sign in again.' };
  }
  return { credential: { kind: 'session', token: fragment.get('token'), expiresAt: fragment.get('expiresAt') } };
}

function randomState() {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}
