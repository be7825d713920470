import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/** The claims of an account at the test issuer (besides `sub`). */
export interface IssuerAccount {
  email?: string;
  email_verified?: boolean;
  name?: string;
}

export interface OidcIssuer {
  /** OAUTH_GOOGLE_ISSUER. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /**
   * A browser at the authorization URL: the user signs in as `as` (the account's `sub`) and consents,
   * or denies; follows the issuer's redirects (with its cookies) and answers the address it finally
   * sends the browser to (the redirect URI with code or error, state and iss).
   */
  authorize(authorizationUrl: string, decision: { as: string } | { deny: true }): Promise<URL>;
  /** Registers the client's redirect URI (the service's, known once it listens); before the first request. */
  allowRedirect(redirectUri: string): void;
  /** Adds (or replaces) an account the issuer knows. */
  account(sub: string, claims: IssuerAccount): void;
  close(): Promise<void>;
}

/**
 * A real OpenID Connect provider (the oidc-provider package) standing in for Google: one
 * confidential client with the test's redirect URI, PKCE required, scopes openid email profile,
 * ID tokens signed with its own keys. A small interaction handler plays the user: it signs in as
 * the account the test names and grants what the client asked for, or denies.
 */
export async function startOidcIssuer(t: { teardown(fn: () => unknown): void }): Promise<OidcIssuer> {
  const clientId = `google-client-${randomBytes(4).toString('hex')}`;
  const clientSecret = randomBytes(24).toString('hex');
  const accounts = new Map<string, IssuerAccount>();
  let decision: { as: string } | { deny: true } = { deny: true };

  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const redirectUris: string[] = [];
  // Made at the first request: the client's redirect URIs are fixed then.
  const makeProvider = () => new Provider(issuer, {
    clients: [{
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: redirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    }],
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    jwks: { keys: [{ ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: 'test', use: 'sig', alg: 'RS256' }] },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 600 },
    findAccount: async (_ctx: unknown, sub: string) => {
      const claims = accounts.get(sub);
      return claims ? { accountId: sub, claims: async () => ({ sub, ...claims }) } : undefined;
    },
  });
  let made: { provider: Provider; handle: ReturnType<Provider['callback']> } | null = null;
  server.on('request', (req, res) => {
    if (!made) {
      const provider = makeProvider();
      made = { provider, handle: provider.callback() };
    }
    const { provider, handle } = made;
    if (!req.url?.startsWith('/interaction/')) return handle(req, res);
    void (async () => {
      const details = await provider.interactionDetails(req, res);
      if ('deny' in decision) {
        return provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'The user denied the request' }, { mergeWithLastSubmission: false });
      }
      if (details.prompt.name === 'login') {
        return provider.interactionFinished(req, res, { login: { accountId: decision.as } }, { mergeWithLastSubmission: false });
      }
      const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: details.params['client_id']! });
      grant.addOIDCScope(details.params['scope'] ?? 'openid');
      return provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
    })().catch((error: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });

  const close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  t.teardown(close);
  return {
    issuer,
    clientId,
    clientSecret,
    allowRedirect: (redirectUri) => void redirectUris.push(redirectUri),
    account: (sub, claims) => void accounts.set(sub, claims),
    async authorize(authorizationUrl, next) {
      decision = next;
      const jar = new Map<string, string>();
      let current = new URL(authorizationUrl);
      for (let hop = 0; hop < 20; hop++) {
        if (current.origin !== issuer) return current;
        const response = await fetch(current, { redirect: 'manual', headers: { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; ') } });
        for (const line of response.headers.getSetCookie()) {
          const pair = line.split(';', 1)[0]!;
          const at = pair.indexOf('=');
          const [name, value] = [pair.slice(0, at).trim(), pair.slice(at + 1)];
          if (value) jar.set(name, value);
          else jar.delete(name);
        }
        const body = await response.text();
        const location = response.headers.get('location');
        if (!location) throw new Error(`the issuer stopped at ${current.pathname} with ${response.status}: ${body.slice(0, 300)}`);
        current = new URL(location, current);
      }
      throw new Error('too many redirects at the issuer');
    },
    close,
  };
}
