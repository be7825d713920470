import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { apiRequest } from './api.js';
import { clearCredential, loadCredential, saveCredential } from './credential-store.js';
import { html } from './html.js';
import { inviteIdOf, JoinView } from './join-view.js';
import { navigate, useRoute } from './router.js';
import { SessionContext, permissionsOf } from './session.js';
import { Shell } from './shell.js';
import { SignInView } from './sign-in-view.js';
import { TeamPicker } from './team-picker.js';

// Signed out: the sign-in view. Signed in with a session but no team chosen: the team picker.
// An invite link (/app/invite/{id}): the join view, once signed in. Otherwise the shell with the
// view of the address.

export function App() {
  const [credential, setCredential] = useState(loadCredential);
  const [signedOutBecause, setSignedOutBecause] = useState(null);
  const [team, setTeam] = useState(null);
  const path = useRoute();

  const forget = useCallback((reason = null) => {
    clearCredential();
    setCredential(null);
    setTeam(null);
    setSignedOutBecause(reason);
    navigate('/app/sign-in', { replace: true });
  }, []);

  const call = useCallback(async (method, apiPath, options) => {
    try {
      return await apiRequest(credential?.token, method, apiPath, options);
    } catch (error) {
      if (error.status === 401) forget('Your session ended. Sign in again.');
      throw error;
    }
  }, [credential, forget]);

  const signIn = useCallback((next) => {
    saveCredential(next);
    setCredential(next);
    setSignedOutBecause(null);
    // Signing in from an invite link comes back to it.
    if (!inviteIdOf(location.pathname)) navigate(next.teamId ? '/app/media' : '/app/teams', { replace: true });
  }, []);

  const chooseTeam = useCallback((teamId) => {
    const next = { ...credential, teamId };
    saveCredential(next);
    setCredential(next);
    setTeam(null);
    navigate('/app/media');
  }, [credential]);

  const signOut = useCallback(async () => {
    // A session ends on the service too; a pasted key is only forgotten (it stays valid for its servers).
    if (credential?.kind === 'session') await apiRequest(credential.token, 'POST', '/v1/auth/sign-out').catch(() => {});
    forget('You are signed out.');
  }, [credential, forget]);

  // The chosen team and the member's permissions there.
  useEffect(() => {
    if (!credential?.teamId || team?.id === credential.teamId) return;
    let live = true;
    call('GET', `/v1/teams/${credential.teamId}/me`)
      .then((info) => live && setTeam({ id: credential.teamId, name: info.team.name, permissions: permissionsOf(info), memberName: info.member.name }))
      .catch(() => live && setTeam({ id: credential.teamId, name: '', permissions: null, memberName: '' }));
    return () => {
      live = false;
    };
  }, [credential?.teamId, call, team?.id]);

  const session = useMemo(() => ({ credential, team, call, signOut, chooseTeam }), [credential, team, call, signOut, chooseTeam]);

  const inviteId = inviteIdOf(path);
  if (!credential) return html`<${SignInView} onSignedIn=${signIn} reason=${signedOutBecause ?? (inviteId ? 'Sign in with your account to accept the invite.' : null)} />`;
  return html`<${SessionContext.Provider} value=${session}>
    ${inviteId ? html`<${JoinView} inviteId=${inviteId} />` : !credential.teamId || path === '/app/teams' ? html`<${TeamPicker} />` : html`<${Shell} path=${path} />`}
  </${SessionContext.Provider}>`;
}
