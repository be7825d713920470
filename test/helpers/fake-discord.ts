import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A Discord user as GET /users/@me answers it. */
export interface DiscordUser {
  id: string;
  username: string;
  global_name?: string | null;
  email?: string | null;
  verified?: boolean;
}

/** A guild member as GET /users/@me/guilds/{guild.id}/member answers it (the fields the service reads). */
export interface DiscordGuildMember {
  nick?: string | null;
  roles: string[];
  joined_at: string;
}

interface IssuedCode {
  user: DiscordUser;
  redirectUri: string;
  codeChallenge: string;
  clientId: string;
  used: boolean;
}

export interface FakeDiscord {
  /** OAUTH_DISCORD_API_URL. */
  apiUrl: string;
  /** OAUTH_DISCORD_AUTHORIZE_URL. */
  authorizeUrl: string;
  clientId: string;
  clientSecret: string;
  /**
   * What the user does at the authorize page: approve as `user`, or deny (error=access_denied).
   * Answers where Discord would send the browser back (the redirect URI with code or error, and state).
   */
  authorize(authorizationUrl: string, decision: { as: DiscordUser } | { deny: true }): Promise<URL>;
  /** Every token request's form fields, in order. */
  tokenRequests: URLSearchParams[];
  /** Members of guilds: guild id → Discord user id → member. A user not listed answers 404 (Unknown Member). */
  guildMembers: Map<string, Map<string, DiscordGuildMember>>;
  /** Answer every guild member request with this status instead (e.g. 500), while set. */
  guildMemberFailure: number | null;
  /** The scope each authorization request asked for, in order. */
  authorizeScopes: string[];
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/**
 * A local server speaking Discord's documented OAuth 2 endpoints: GET /oauth2/authorize (approves
 * or denies at once, as the test decides), POST /api/oauth2/token (authorization_code grant:
 * checks client id and secret, the code, its redirect_uri and the PKCE verifier against the S256
 * challenge; a code works once), GET /api/users/@me and GET /api/users/@me/guilds/{guild}/member
 * (Bearer access token; members from `guildMembers`).
 */
export async function startFakeDiscord(t: { teardown(fn: () => unknown): void }): Promise<FakeDiscord> {
  const clientId = `discord-client-${randomBytes(4).toString('hex')}`;
  const clientSecret = randomBytes(16).toString('hex');
  const codes = new Map<string, IssuedCode>();
  const accessTokens = new Map<string, DiscordUser>();
  const tokenRequests: URLSearchParams[] = [];
  const guildMembers = new Map<string, Map<string, DiscordGuildMember>>();
  const authorizeScopes: string[] = [];
  let decision: { as: DiscordUser } | { deny: true } | null = null;

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (req.method === 'GET' && url.pathname === '/oauth2/authorize') {
        authorizeScopes.push(url.searchParams.get('scope') ?? '');
        const redirectUri = url.searchParams.get('redirect_uri') ?? '';
        const state = url.searchParams.get('state');
        if (url.searchParams.get('client_id') !== clientId || !redirectUri) return send(res, 400, { error: 'invalid_request' });
        const back = new URL(redirectUri);
        if (state !== null) back.searchParams.set('state', state);
        if (!decision || 'deny' in decision) {
          back.searchParams.set('error', 'access_denied');
          back.searchParams.set('error_description', 'The resource owner or authorization server denied the request');
        } else {
          if (url.searchParams.get('code_challenge_method') !== 'S256' || !url.searchParams.get('code_challenge')) {
            return send(res, 400, { error: 'invalid_request', error_description: 'PKCE S256 required' });
          }
          const code = randomBytes(15).toString('base64url');
          codes.set(code, { user: decision.as, redirectUri, codeChallenge: url.searchParams.get('code_challenge')!, clientId, used: false });
          back.searchParams.set('code', code);
        }
        res.writeHead(302, { location: back.href });
        return res.end();
      }
      if (req.method === 'POST' && url.pathname === '/api/oauth2/token') {
        const form = new URLSearchParams(await readBody(req));
        tokenRequests.push(form);
        if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret) return send(res, 401, { error: 'invalid_client' });
        if (form.get('grant_type') !== 'authorization_code') return send(res, 400, { error: 'unsupported_grant_type' });
        const issued = codes.get(form.get('code') ?? '');
        if (!issued || issued.used) return send(res, 400, { error: 'invalid_grant', error_description: 'Invalid "code" in request.' });
        issued.used = true;
        if (form.get('redirect_uri') !== issued.redirectUri) return send(res, 400, { error: 'invalid_grant', error_description: 'Invalid "redirect_uri" in request.' });
        if (s256(form.get('code_verifier') ?? '') !== issued.codeChallenge) return send(res, 400, { error: 'invalid_grant', error_description: 'Invalid "code_verifier"' });
        const accessToken = randomBytes(20).toString('base64url');
        accessTokens.set(accessToken, issued.user);
        return send(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: 604800, refresh_token: randomBytes(20).toString('base64url'), scope: 'identify email' });
      }
      if (req.method === 'GET' && url.pathname === '/api/users/@me') {
        const user = accessTokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
        if (!user) return send(res, 401, { message: '401: Unauthorized', code: 0 });
        return send(res, 200, { global_name: null, avatar: null, discriminator: '0', ...user });
      }
      const guild = /^\/api\/users\/@me\/guilds\/([^/]+)\/member$/.exec(url.pathname);
      if (req.method === 'GET' && guild) {
        const user = accessTokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
        if (!user) return send(res, 401, { message: '401: Unauthorized', code: 0 });
        if (fake.guildMemberFailure !== null) return send(res, fake.guildMemberFailure, { message: 'failure', code: 0 });
        const member = guildMembers.get(decodeURIComponent(guild[1]!))?.get(user.id);
        if (!member) return send(res, 404, { message: 'Unknown Member', code: 10007 });
        return send(res, 200, { user: { id: user.id, username: user.username, global_name: user.global_name ?? null }, avatar: null, deaf: false, mute: false, flags: 0, pending: false, ...member });
      }
      send(res, 404, { message: '404: Not Found', code: 0 });
    })().catch((error: unknown) => send(res, 500, { message: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fake: FakeDiscord = {
    apiUrl: `${base}/api`,
    authorizeUrl: `${base}/oauth2/authorize`,
    clientId,
    clientSecret,
    tokenRequests,
    guildMembers,
    guildMemberFailure: null,
    authorizeScopes,
    async authorize(authorizationUrl, next) {
      decision = next;
      const response = await fetch(authorizationUrl, { redirect: 'manual' });
      await response.arrayBuffer();
      const location = response.headers.get('location');
      if (response.status !== 302 || !location) throw new Error(`the fake Discord answered ${response.status}`);
      return new URL(location);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  t.teardown(() => fake.close());
  return fake;
}
