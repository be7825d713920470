import pino from 'pino';
import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer, TEST_PASSWORD_HASH_COST, type TestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot } from '../helpers/team-admin.ts';

// No cache: every request sees the database as it is (the two-instance test below keeps the cache on).
const server = await startTestServer(t, {
  settings: { RATE_LIMIT_POINTS: 100_000, API_KEY_CACHE_SECONDS: 0, SIGN_IN_LIMIT_ACCOUNT_POINTS: 3, SIGN_IN_LIMIT_ADDRESS_POINTS: 1000 },
});
const PASSWORD = 'correct horse battery';
let counter = 0;

async function signUp(target: TestServer = server, overrides: Record<string, string> = {}) {
  const n = ++counter;
  const body = { email: `person${n}@example.com`, username: `person_${n}`, password: PASSWORD, ...overrides };
  const response = await target.request('POST', '/v1/auth/sign-up', { body });
  if (response.status !== 201) throw new Error(`sign-up failed: ${JSON.stringify(response.body)}`);
  return { ...body, token: response.body.token as string, userId: response.body.user.id as string };
}

async function sql<T = any>(text: string, params: unknown[] = []): Promise<T[]> {
  const client = await connectPg(server.databaseUrl);
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

const me = (token: string, target: TestServer = server) => target.media('GET', '/v1/users/me', token);
const signIn = (login: string, password: string) => server.request('POST', '/v1/auth/sign-in', { body: { login, password } });

/** A team in which the user is a member of a group with `permissions` (joined through an invite). */
async function teamWithMember(userId: string, permissions: string[]) {
  const team = await server.createTeam(`Team${++counter}`);
  const group = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: 'Crew', permissions })).body;
  const invite = (await server.media('POST', `/v1/teams/${team.teamId}/invites`, team.key, { body: { groupId: group.id } })).body;
  const joined = await server.admin('POST', `/v1/admin/invites/${invite.id}/accept`, { userId });
  if (joined.status !== 201) throw new Error(`join failed: ${JSON.stringify(joined.body)}`);
  return { ...team, memberId: joined.body.id as string };
}

t.test('sign-up signs in; the token reads the user; the password is stored only as a scrypt hash', async (t) => {
  const user = await signUp();
  t.match(user.token, /^tss_[A-Za-z0-9_-]{43}$/);
  const answer = await me(user.token);
  t.equal(answer.status, 200);
  t.match(answer.body, { id: user.userId, username: user.username, email: user.email, isEmailVerified: false, disabled: false, permissions: [] });
  t.notOk(JSON.stringify(answer.body).includes(PASSWORD));
  const [account] = await sql('select provider_id, account_id, type, password from account where user_id = $1', [user.userId]);
  t.match(account, { provider_id: 'credential', account_id: user.userId, type: 'credential' });
  t.match(account.password, new RegExp(`^scrypt\\$${TEST_PASSWORD_HASH_COST}\\$8\\$1\\$[A-Za-z0-9_-]+\\$[A-Za-z0-9_-]{43}$`), 'at the configured PASSWORD_HASH_COST');
  const [session] = await sql('select token_hash, method from user_session where user_id = $1', [user.userId]);
  t.equal(session.method, 'password');
  t.notOk(session.token_hash.includes(user.token.slice(4)), 'only the hash is stored');
});

t.test('sign-up refusals leave no user', async (t) => {
  const taken = await signUp();
  const before = await tableSnapshot(server, 'select id from "user" order by id', []);
  const attempt = (body: Record<string, string>) => server.request('POST', '/v1/auth/sign-up', { body: { email: 'new@example.com', username: 'new_person', password: PASSWORD, ...body } });
  expectError(t, await attempt({ username: 'ab' }), 400, 'error.badRequest');
  expectError(t, await attempt({ username: 'has-dash' }), 400, 'error.badRequest');
  expectError(t, await attempt({ email: 'not an email' }), 400, 'error.badRequest');
  expectError(t, await attempt({ password: 'short' }), 400, 'error.badRequest');
  expectError(t, await attempt({ email: taken.email.toUpperCase() }), 409, 'error.user.emailTaken');
  expectError(t, await attempt({ username: taken.username.toUpperCase() }), 409, 'error.user.usernameTaken');
  expectError(t, await server.request('POST', '/v1/auth/sign-up', { body: { email: 'x@example.com', username: 'xyz', password: PASSWORD, extra: 1 } }), 400, 'error.badRequest');
  t.equal(await tableSnapshot(server, 'select id from "user" order by id', []), before);
});

t.test('two racing sign-ups with one address: one user', async (t) => {
  const bodies = ['Race', 'race'].map((name, i) => ({ email: `${name}@example.com`, username: `racer_${i}`, password: PASSWORD }));
  const answers = await Promise.all(bodies.map((body) => server.request('POST', '/v1/auth/sign-up', { body })));
  t.same(answers.map((a) => a.status).sort(), [201, 409]);
  t.equal((await sql(`select 1 from "user" where lower(email) = 'race@example.com'`)).length, 1);
});

t.test('sign-in by email or username in any case; wrong or unknown: one 401', async (t) => {
  const user = await signUp();
  const [before] = await sql('select last_login_at from "user" where id = $1', [user.userId]);
  const byEmail = await signIn(user.email.toUpperCase(), PASSWORD);
  t.equal(byEmail.status, 200);
  t.equal(byEmail.headers.get('cache-control'), 'no-store');
  t.equal(byEmail.body.user.id, user.userId);
  t.ok(new Date(byEmail.body.user.lastLoginAt) > new Date(before.last_login_at), 'lastLoginAt moves');
  t.equal((await signIn(user.username.toUpperCase(), PASSWORD)).status, 200);
  const wrong = await signIn(user.email, 'wrong password!');
  const unknown = await signIn('nobody@example.com', PASSWORD);
  expectError(t, wrong, 401, 'error.unauthorized');
  expectError(t, unknown, 401, 'error.unauthorized');
  t.equal(wrong.body.message, unknown.body.message, 'an unknown login reads like a wrong password');
  t.equal((await sql('select count(*)::int as n from user_session where user_id = $1', [user.userId]))[0].n, 3, 'failures make no session');
});

t.test('failed sign-ins are throttled per account: 429 with Retry-After, even for the right password', async (t) => {
  const user = await signUp();
  for (let i = 0; i < 3; i++) expectError(t, await signIn(user.username, 'wrong password!'), 401, 'error.unauthorized');
  const refused = await signIn(user.username, PASSWORD);
  expectError(t, refused, 429, 'error.tooManyRequests');
  t.ok(Number(refused.headers.get('retry-after')) > 0);
  t.equal((await signIn(`${user.username}x`, PASSWORD)).status, 401, 'another login is not refused');
});

t.test('failed sign-ins are throttled per client address', async (t) => {
  const strict = await startTestServer(t, { settings: { SIGN_IN_LIMIT_ACCOUNT_POINTS: 100, SIGN_IN_LIMIT_ADDRESS_POINTS: 4 } });
  const user = await signUp(strict);
  for (let i = 0; i < 4; i++) {
    t.equal((await strict.request('POST', '/v1/auth/sign-in', { body: { login: `someone${i}@example.com`, password: 'guess guess guess' } })).status, 401);
  }
  const refused = await strict.request('POST', '/v1/auth/sign-in', { body: { login: user.email, password: PASSWORD } });
  expectError(t, refused, 429, 'error.tooManyRequests');
  t.ok(Number(refused.headers.get('retry-after')) > 0);
});

t.test('sessions: listed, one revoked, sign-out, the others revoked; each stops at once', async (t) => {
  const user = await signUp();
  const second = (await signIn(user.email, PASSWORD)).body.token as string;
  const third = (await signIn(user.email, PASSWORD)).body.token as string;
  const list = await me(user.token).then(() => server.media('GET', '/v1/users/me/sessions', user.token));
  t.equal(list.status, 200);
  t.equal(list.body.length, 3);
  t.equal(list.body.filter((s: any) => s.current).length, 1);
  t.notOk(JSON.stringify(list.body).includes('tss_'), 'no token is listed');
  const secondId = (await server.media('GET', '/v1/users/me/sessions', second)).body.find((s: any) => s.current).id;
  t.equal((await server.media('DELETE', `/v1/users/me/sessions/${secondId}`, user.token)).status, 204);
  expectError(t, await me(second), 401, 'error.unauthorized');
  expectError(t, await server.media('DELETE', `/v1/users/me/sessions/${secondId}`, user.token), 404, 'error.notFound');
  const other = await signUp();
  const otherId = (await server.media('GET', '/v1/users/me/sessions', other.token)).body[0].id;
  expectError(t, await server.media('DELETE', `/v1/users/me/sessions/${otherId}`, user.token), 404, 'error.notFound');
  t.equal((await me(other.token)).status, 200, 'another user\'s session is not touched');
  t.equal((await server.media('POST', '/v1/auth/sign-out', third)).status, 204);
  expectError(t, await me(third), 401, 'error.unauthorized');
  await signIn(user.email, PASSWORD);
  t.same((await server.media('DELETE', '/v1/users/me/sessions', user.token)).body, { revoked: 1 });
  t.equal((await me(user.token)).status, 200, 'the caller\'s session stays');
});

t.test('malformed, unknown, expired tokens and API keys on the user routes: 401', async (t) => {
  const team = await server.createTeam('KeyHolder');
  expectError(t, await me(team.key), 401, 'error.unauthorized');
  expectError(t, await me('tss_short'), 401, 'error.unauthorized');
  expectError(t, await me(`tss_${'A'.repeat(43)}`), 401, 'error.unauthorized');
  expectError(t, await server.request('GET', '/v1/users/me'), 401, 'error.unauthorized');
  const user = await signUp();
  await sql(`update user_session set expires_at = now() - interval '1 second' where user_id = $1`, [user.userId]);
  expectError(t, await me(user.token), 401, 'error.unauthorized');
});

t.test('expired sessions are swept', async (t) => {
  const user = await signUp();
  await sql(`update user_session set expires_at = now() - interval '1 second' where user_id = $1`, [user.userId]);
  const deleted = await server.app.services.expiredRows.runOnce();
  t.ok(deleted['user_session']! >= 1);
  t.same(await sql('select id from user_session where user_id = $1', [user.userId]), []);
});

t.test('a session slides: used over an hour after its last renewal, it lives SESSION_TTL_DAYS again', async (t) => {
  const user = await signUp();
  await sql(`update user_session set last_used_at = now() - interval '2 hours', expires_at = now() + interval '1 day' where user_id = $1`, [user.userId]);
  t.equal((await me(user.token)).status, 200);
  let renewed: any;
  for (let i = 0; i < 50 && !renewed; i++) {
    [renewed] = await sql(`select expires_at from user_session where user_id = $1 and expires_at > now() + interval '29 days'`, [user.userId]);
    if (!renewed) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.ok(renewed, 'expires_at moved to 30 days ahead');
});

t.test('on a team\'s routes a session acts with the user\'s membership; not a member: 401 like a key of another team', async (t) => {
  const user = await signUp();
  const team = await teamWithMember(user.userId, ['team.media.view', 'team.media.upload']);
  const upload = await server.media('POST', `/v1/cdn/media/${team.teamId}/upload`, user.token, {
    body: { file: `data:text/plain;base64,${Buffer.from('from a session').toString('base64')}`, fileName: 'session.txt' },
  });
  t.equal(upload.status, 201);
  const [row] = await sql('select uploaded_by_key_id from media_file where id = $1', [upload.body.id]);
  t.equal(row.uploaded_by_key_id, null, 'no key made it');
  const list = await server.media('GET', `/v1/cdn/media/${team.teamId}`, user.token);
  t.equal(list.status, 200);
  t.ok(list.headers.get('ratelimit-limit'), 'the session has its rate limit');
  expectError(t, await server.media('DELETE', `/v1/cdn/media/${team.teamId}/delete/${upload.body.id}`, user.token), 403, 'error.forbidden');
  expectError(t, await server.media('GET', `/v1/teams/${team.teamId}/api-keys`, user.token), 403, 'error.forbidden');

  const elsewhere = await server.createTeam('Elsewhere');
  expectError(t, await server.media('GET', `/v1/cdn/media/${elsewhere.teamId}`, user.token), 401, 'error.unauthorized');
  expectError(t, await server.media('GET', `/v1/teams/${elsewhere.teamId}/members`, user.token), 401, 'error.unauthorized');

  const mine = await server.media('GET', '/v1/users/me/teams', user.token);
  t.same(mine.body.map((m: any) => m.team.id), [team.teamId]);

  // Kicked: the membership no longer acts, at once.
  t.equal((await server.media('DELETE', `/v1/teams/${team.teamId}/members/${team.memberId}`, team.key)).status, 204);
  expectError(t, await server.media('GET', `/v1/cdn/media/${team.teamId}`, user.token), 401, 'error.unauthorized');
});

t.test('an owner\'s session has every permission; an upload URL made by a session dies with it', async (t) => {
  const user = await signUp();
  const team = await teamWithMember(user.userId, []);
  await sql('update team_member set is_team_owner = true where id = $1', [team.memberId]);
  t.equal((await server.media('GET', `/v1/teams/${team.teamId}/api-keys`, user.token)).status, 200);
  const made = await server.media('POST', `/v1/cdn/media/${team.teamId}/upload-urls`, user.token, { body: { fileName: 'shot.png' } });
  t.equal(made.status, 201);
  const [url] = await sql('select key_id, session_id from upload_url where team_id = $1', [team.teamId]);
  t.equal(url.key_id, null);
  t.ok(url.session_id);
  await server.media('POST', '/v1/auth/sign-out', user.token);
  t.same(await sql('select id from upload_url where team_id = $1', [team.teamId]), [], 'gone with the session');
});

t.test('password change: every session ends, the caller gets a new one; the old password stops', async (t) => {
  const user = await signUp();
  const other = (await signIn(user.email, PASSWORD)).body.token as string;
  expectError(t, await server.media('POST', '/v1/users/me/password', user.token, { body: { currentPassword: 'not it at all', newPassword: 'a new long password' } }), 403, 'error.forbidden');
  expectError(t, await server.media('POST', '/v1/users/me/password', user.token, { body: { currentPassword: PASSWORD, newPassword: 'short' } }), 400, 'error.badRequest');
  t.equal((await me(other)).status, 200, 'refusals change nothing');
  const changed = await server.media('POST', '/v1/users/me/password', user.token, { body: { currentPassword: PASSWORD, newPassword: 'a new long password' } });
  t.equal(changed.status, 200);
  expectError(t, await me(user.token), 401, 'error.unauthorized');
  expectError(t, await me(other), 401, 'error.unauthorized');
  t.equal((await me(changed.body.token)).status, 200);
  expectError(t, await signIn(user.email, PASSWORD), 401, 'error.unauthorized');
  t.equal((await signIn(user.email, 'a new long password')).status, 200);
});

t.test('username: changed once, then the cool-down (429); taken names 409', async (t) => {
  const user = await signUp();
  const rival = await signUp();
  expectError(t, await server.media('PATCH', '/v1/users/me', user.token, { body: { username: rival.username.toLowerCase() } }), 409, 'error.user.usernameTaken');
  expectError(t, await server.media('PATCH', '/v1/users/me', user.token, { body: { username: 'no' } }), 400, 'error.badRequest');
  const renamed = await server.media('PATCH', '/v1/users/me', user.token, { body: { username: `renamed_${counter}`, welcomeScreen: false } });
  t.equal(renamed.status, 200);
  t.match(renamed.body, { username: `renamed_${counter}`, welcomeScreen: false });
  t.ok(new Date(renamed.body.changedUsernameAt).getTime() > Date.now() - 60_000);
  const again = await server.media('PATCH', '/v1/users/me', user.token, { body: { username: `again_${counter}` } });
  expectError(t, again, 429, 'error.user.usernameCooldown');
  t.ok(Number(again.headers.get('retry-after')) > 29 * 86_400);
  t.equal((await me(user.token)).body.username, `renamed_${counter}`);
});

t.test('disabling a user stops its sessions, sign-in and linked keys at once; enabling restores sign-in', async (t) => {
  const user = await signUp();
  const team = await teamWithMember(user.userId, ['team.media.view']);
  const key = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { teamMemberId: team.memberId })).body.key as string;
  t.equal((await server.media('GET', `/v1/cdn/media/${team.teamId}`, key)).status, 200);
  const disabled = await server.admin('POST', `/v1/admin/users/${user.userId}/disable`);
  t.equal(disabled.status, 200);
  t.match(disabled.body, { disabled: true, disabledAt: String });
  expectError(t, await me(user.token), 401, 'error.unauthorized');
  expectError(t, await server.media('GET', `/v1/cdn/media/${team.teamId}`, key), 401, 'error.unauthorized');
  expectError(t, await signIn(user.email, PASSWORD), 403, 'error.user.disabled');
  expectError(t, await signIn(user.email, 'wrong password!'), 401, 'error.unauthorized');
  t.equal((await server.media('GET', `/v1/cdn/media/${team.teamId}`, team.key)).status, 200, 'the team\'s other keys work');
  t.match((await server.admin('POST', `/v1/admin/users/${user.userId}/enable`)).body, { disabled: false, disabledAt: null });
  t.equal((await signIn(user.email, PASSWORD)).status, 200);
  t.equal((await server.media('GET', `/v1/cdn/media/${team.teamId}`, key)).status, 200);
  expectError(t, await server.admin('POST', '/v1/admin/users/00000000-0000-4000-8000-000000000000/disable'), 404, 'error.notFound');
  expectError(t, await server.request('POST', `/v1/admin/users/${user.userId}/disable`), 401, 'error.unauthorized');
});

t.test('global permissions are set by the operator and grant nothing in teams', async (t) => {
  const user = await signUp();
  const set = await server.admin('PUT', `/v1/admin/users/${user.userId}/permissions`, { permissions: ['service.users.read'] });
  t.same(set.body.permissions, ['service.users.read']);
  expectError(t, await server.admin('PUT', `/v1/admin/users/${user.userId}/permissions`, { permissions: ['Not Valid'] }), 400, 'error.badRequest');
  const team = await server.createTeam('Global');
  expectError(t, await server.media('GET', `/v1/cdn/media/${team.teamId}`, user.token), 401, 'error.unauthorized');
});

t.test('a verification mail that cannot be queued is logged; the sign-up still answers 201 and signs in', async (t) => {
  const logged: any[] = [];
  const logging = await startTestServer(t, { logger: pino({ level: 'error' }, { write: (line: string) => void logged.push(JSON.parse(line)) }) });
  const client = await connectPg(logging.databaseUrl);
  await client.query('alter table mail_outbox rename to mail_outbox_away');
  try {
    const user = await signUp(logging);
    t.equal((await me(user.token, logging)).status, 200);
    t.match(logged, [{ msg: 'email verification mail not queued', userId: user.userId }]);
  } finally {
    await client.query('alter table mail_outbox_away rename to mail_outbox');
    await client.end();
  }
});

t.test('sign-up can be closed', async (t) => {
  const closed = await startTestServer(t, { settings: { SIGN_UP_ENABLED: false } });
  expectError(t, await closed.request('POST', '/v1/auth/sign-up', { body: { email: 'a@example.com', username: 'closed_a', password: PASSWORD } }), 403, 'error.user.signUpClosed');
});

t.test('two instances: a session revoked on one stops on the other at once (cache on)', async (t) => {
  const a = await startTestServer(t, { settings: { API_KEY_CACHE_SECONDS: 300 } });
  const b = await startTestServer(t, { databaseUrl: a.databaseUrl, settings: { API_KEY_CACHE_SECONDS: 300 } });
  const user = await signUp(a);
  const other = (await a.request('POST', '/v1/auth/sign-in', { body: { login: user.email, password: PASSWORD } })).body.token as string;
  t.equal((await me(other, b)).status, 200, 'b has it cached');
  t.equal((await a.media('POST', '/v1/auth/sign-out', other)).status, 204);
  let status = 200;
  for (let i = 0; i < 100 && status === 200; i++) {
    status = (await me(other, b)).status;
    if (status === 200) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  t.equal(status, 401, 'b heard it (NOTIFY) within a second');
  t.equal((await me(user.token, b)).status, 200, 'the user\'s other session still works on b');
});
