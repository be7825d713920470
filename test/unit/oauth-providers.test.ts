import { calculatePKCECodeChallenge, randomNonce, randomPKCECodeVerifier, randomState } from 'openid-client';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { DiscordProvider } from '../../src/auth/oauth/discord-provider.ts';
import { GoogleProvider } from '../../src/auth/oauth/google-provider.ts';
import { OAuthProviderError, type AuthorizationRequest, type OAuthProvider } from '../../src/auth/oauth/provider.ts';
import { startFakeDiscord } from '../helpers/fake-discord.ts';
import { startOidcIssuer } from '../helpers/oidc-issuer.ts';

const redirectUri = 'http://127.0.0.1:1/v1/auth/oauth/test/callback';

async function begin(provider: OAuthProvider, withNonce: boolean) {
  const request: AuthorizationRequest = { redirectUri, state: randomState(), codeVerifier: randomPKCECodeVerifier(), nonce: withNonce ? randomNonce() : null };
  const url = await provider.authorizationUrl({ ...request, codeChallenge: await calculatePKCECodeChallenge(request.codeVerifier) });
  return { request, url };
}

t.test('google (OpenID Connect against oidc-provider): code, PKCE, nonce; refusals', async (t) => {
  const issuer = await startOidcIssuer(t);
  issuer.allowRedirect(redirectUri);
  issuer.account('g-1', { email: 'Ada@example.org', email_verified: true, name: 'Ada Lovelace' });
  const google = new GoogleProvider({ clientId: issuer.clientId, clientSecret: issuer.clientSecret, issuer: issuer.issuer });

  const { request, url } = await begin(google, true);
  t.equal(url.searchParams.get('code_challenge_method'), 'S256');
  t.equal(url.searchParams.get('nonce'), request.nonce);
  const back = await issuer.authorize(url.href, { as: 'g-1' });
  t.equal(back.origin + back.pathname, redirectUri);
  const identity = await google.finish(request, back.searchParams);
  t.match(identity, { accountId: 'g-1', email: 'Ada@example.org', emailVerified: true, name: 'Ada Lovelace', data: { email: 'Ada@example.org' } });
  t.ok(identity.tokens.accessToken && identity.tokens.idToken, 'tokens kept');

  await t.rejects(google.finish(request, back.searchParams), OAuthProviderError, 'a code works once');

  const second = await begin(google, true);
  const secondBack = await issuer.authorize(second.url.href, { as: 'g-1' });
  await t.rejects(google.finish({ ...second.request, codeVerifier: randomPKCECodeVerifier() }, secondBack.searchParams), { code: 'invalid_grant' }, 'wrong verifier');

  const third = await begin(google, true);
  const thirdBack = await issuer.authorize(third.url.href, { as: 'g-1' });
  await t.rejects(google.finish({ ...third.request, nonce: randomNonce() }, thirdBack.searchParams), OAuthProviderError, 'wrong nonce');

  const denied = await begin(google, true);
  const deniedBack = await issuer.authorize(denied.url.href, { deny: true });
  await t.rejects(google.finish(denied.request, deniedBack.searchParams), { code: 'access_denied' });
});

t.test('discord (plain OAuth 2 against the fake Discord): code, PKCE, /users/@me; refusals', async (t) => {
  const fake = await startFakeDiscord(t);
  const discord = new DiscordProvider({ clientId: fake.clientId, clientSecret: fake.clientSecret, apiUrl: fake.apiUrl, authorizeUrl: fake.authorizeUrl });
  const user = { id: '80351110224678912', username: 'nelly', email: 'nelly@example.com', verified: true };

  const { request, url } = await begin(discord, false);
  t.equal(url.searchParams.get('scope'), 'identify email');
  const back = await fake.authorize(url.href, { as: user });
  const identity = await discord.finish(request, back.searchParams);
  t.match(identity, { accountId: user.id, name: 'nelly', email: 'nelly@example.com', emailVerified: true, data: { username: 'nelly' } });
  t.equal(fake.tokenRequests.at(-1)!.get('code_verifier'), request.codeVerifier);

  await t.rejects(discord.finish(request, back.searchParams), { code: 'invalid_grant' }, 'a code works once');
  const second = await begin(discord, false);
  const secondBack = await fake.authorize(second.url.href, { as: user });
  await t.rejects(discord.finish({ ...second.request, state: randomState() }, secondBack.searchParams), OAuthProviderError, 'state mismatch');
  const third = await begin(discord, false);
  const thirdBack = await fake.authorize(third.url.href, { as: user });
  await t.rejects(discord.finish({ ...third.request, codeVerifier: randomPKCECodeVerifier() }, thirdBack.searchParams), { code: 'invalid_grant' });
  const denied = await begin(discord, false);
  await t.rejects(discord.finish(denied.request, (await fake.authorize(denied.url.href, { deny: true })).searchParams), { code: 'access_denied' });

  const wrongSecret = new DiscordProvider({ clientId: fake.clientId, clientSecret: 'nope', apiUrl: fake.apiUrl, authorizeUrl: fake.authorizeUrl });
  const fourth = await begin(wrongSecret, false);
  await t.rejects(wrongSecret.finish(fourth.request, (await fake.authorize(fourth.url.href, { as: user })).searchParams), { code: 'invalid_client' });
});

t.test('a provider that cannot be reached: OAuthProviderError unreachable (the routes answer 502)', async (t) => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const google = new GoogleProvider({ clientId: 'id', clientSecret: 'secret', issuer: base });
  await t.rejects(begin(google, true), { name: 'OAuthProviderError', code: 'unreachable' }, 'discovery');
  const discord = new DiscordProvider({ clientId: 'id', clientSecret: 'secret', apiUrl: `${base}/api`, authorizeUrl: `${base}/oauth2/authorize` });
  const { request } = await begin(discord, false);
  await t.rejects(discord.finish(request, new URLSearchParams({ code: 'c', state: request.state })), { name: 'OAuthProviderError', code: 'unreachable' }, 'token endpoint');
  const plainHttp = new DiscordProvider({ clientId: 'id', clientSecret: 'secret', apiUrl: 'http://discord.example.com/api', authorizeUrl: 'https://discord.com/oauth2/authorize' });
  await t.rejects(plainHttp.finish(request, new URLSearchParams({ code: 'c', state: request.state })), { name: 'OAuthProviderError', code: 'OAUTH_HTTP_REQUEST_FORBIDDEN' }, 'plain http only towards loopback');
});
