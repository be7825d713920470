import t from 'tap';
import { confirm, join, outboxToken, signUp, sql, teamOwnedBy } from '../helpers/accounts.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';

// Mail goes to the outbox here (no SMTP_URL); tokens are read from it.
const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000, API_KEY_CACHE_SECONDS: 0, AUTH_FAILURE_LIMIT_POINTS: 1000 } });
const tokens = () => tableSnapshot(server, 'select id, used_at, locked from verification_action_token order by id', []);
const users = () => tableSnapshot(server, 'select id, email, is_email_verified, email_verified from "user" order by id', []);
const ageAll = (userId: string) => sql(server, `update verification_action_token set created_at = created_at - interval '2 minutes' where user_id = $1`, [userId]);

t.test('sign-up mails a verification token; verify-email sets isEmailVerified and emailVerified, once', async (t) => {
  const user = await signUp(server);
  const [mail] = await sql(server, `select subject, body, sent_at from mail_outbox where recipient = $1 and kind = 'verification.EMAIL_VERIFY'`, [user.email]);
  t.equal(mail.subject, 'Confirm your email address');
  t.equal(mail.sent_at, null, 'kept in the outbox');
  const token = await outboxToken(server, user.email, 'verification.EMAIL_VERIFY');
  const stored = await sql(server, 'select token_hash, type, expires_at, created_at from verification_action_token where user_id = $1', [user.userId]);
  t.equal(stored.length, 1);
  t.equal(stored[0].type, 'EMAIL_VERIFY');
  t.not(stored[0].token_hash, token, 'only the hash is stored');
  t.match(stored[0].token_hash, /^[0-9a-f]{64}$/);
  const hours = (stored[0].expires_at - stored[0].created_at) / 3_600_000;
  t.ok(hours > 23.9 && hours <= 24, 'valid for 24 hours');

  t.equal((await server.media('GET', '/v1/users/me', user.token)).body.isEmailVerified, false);
  t.same((await server.media('GET', '/v1/users/me', user.token)).body.verificationActionTokens, [], 'email verification is not in the progress list');
  expectError(t, await confirm(server, token), 403, 'error.verification.tokenInvalid');

  const verified = await server.request('POST', '/v1/auth/verify-email', { body: { token } });
  t.equal(verified.status, 200);
  t.equal(verified.body.isEmailVerified, true);
  const me = (await server.media('GET', '/v1/users/me', user.token)).body;
  t.equal(me.isEmailVerified, true);
  t.equal(me.emailVerified, verified.body.emailVerified);
  const before = await users();
  expectError(t, await server.request('POST', '/v1/auth/verify-email', { body: { token } }), 410, 'error.verification.tokenUsed');
  t.equal(await users(), before, 'nothing changed');

  expectError(t, await server.media('POST', '/v1/users/me/email/verification', user.token), 409, 'error.conflict');
});

t.test('verify-email refuses wrong, malformed and expired tokens, and action tokens; nothing changes', async (t) => {
  const user = await signUp(server);
  const token = await outboxToken(server, user.email, 'verification.EMAIL_VERIFY');
  const before = await users();
  const verify = (body: unknown) => server.request('POST', '/v1/auth/verify-email', { body });
  expectError(t, await verify({ token: `tvt_${'A'.repeat(43)}` }), 403, 'error.verification.tokenInvalid');
  expectError(t, await verify({ token: 'nonsense' }), 403, 'error.verification.tokenInvalid');
  expectError(t, await verify({}), 400, 'error.missingArgument.token');
  expectError(t, await verify({ token, extra: 1 }), 400, 'error.badRequest');
  await sql(server, `update verification_action_token set expires_at = now() - interval '1 second' where user_id = $1`, [user.userId]);
  expectError(t, await verify({ token }), 410, 'error.verification.tokenExpired');
  t.equal(await users(), before);
  await sql(server, `update verification_action_token set expires_at = now() + interval '1 hour' where user_id = $1`, [user.userId]);

  await server.media('POST', '/v1/users/me/export', user.token);
  const exportToken = await outboxToken(server, user.email, 'verification.ACCOUNT_EXPORT');
  expectError(t, await verify({ token: exportToken }), 403, 'error.verification.tokenInvalid');
  t.equal(await users(), before);
});

t.test('re-sending the verification mail: throttled, and the earlier token stops working', async (t) => {
  const user = await signUp(server);
  const first = await outboxToken(server, user.email, 'verification.EMAIL_VERIFY');
  const soon = await server.media('POST', '/v1/users/me/email/verification', user.token);
  expectError(t, soon, 429, 'error.tooManyRequests');
  t.ok(Number(soon.headers.get('retry-after')) > 0);
  await ageAll(user.userId);
  t.equal((await server.media('POST', '/v1/users/me/email/verification', user.token)).status, 202);
  const second = await outboxToken(server, user.email, 'verification.EMAIL_VERIFY');
  t.not(second, first);
  expectError(t, await server.request('POST', '/v1/auth/verify-email', { body: { token: first } }), 403, 'error.verification.tokenInvalid');
  t.equal((await server.request('POST', '/v1/auth/verify-email', { body: { token: second } })).status, 200);
  expectError(t, await server.request('POST', '/v1/users/me/email/verification', {}), 401, 'error.unauthorized');
});

t.test('confirm: wrong, used, expired tokens are refused and change nothing', async (t) => {
  const user = await signUp(server);
  const started = await server.media('POST', '/v1/users/me/export', user.token);
  t.equal(started.status, 202);
  t.match(started.body, [{ type: 'ACCOUNT_EXPORT', userId: user.userId, data: null, usedAt: null, locked: false }]);
  t.notOk('token' in started.body[0], 'progress never shows the token');
  const token = await outboxToken(server, user.email, 'verification.ACCOUNT_EXPORT');
  const before = await tokens();
  expectError(t, await confirm(server, `tvt_${'B'.repeat(43)}`), 403, 'error.verification.tokenInvalid');
  expectError(t, await confirm(server, token.slice(0, -1)), 403, 'error.verification.tokenInvalid');
  expectError(t, await server.request('POST', '/v1/auth/verification-tokens/confirm', { body: { token: 5 } }), 400, 'error.badRequest');
  expectError(t, await server.request('POST', '/v1/auth/verification-tokens/confirm', { body: '{' }), 400, 'error.badRequest');
  await sql(server, `update verification_action_token set expires_at = now() - interval '1 second' where user_id = $1 and type = 'ACCOUNT_EXPORT'`, [user.userId]);
  const expiredBefore = await tokens();
  expectError(t, await confirm(server, token), 410, 'error.verification.tokenExpired');
  t.equal(await tokens(), expiredBefore, 'nothing changed');
  t.equal(before, expiredBefore, '(expiry is not in the snapshot)');
  t.same((await server.media('GET', '/v1/users/me/verification-tokens', user.token)).body, [], 'expired tokens are not shown');

  await ageAll(user.userId);
  await server.media('POST', '/v1/users/me/export', user.token);
  const fresh = await outboxToken(server, user.email, 'verification.ACCOUNT_EXPORT');
  const done = await confirm(server, fresh);
  t.equal(done.status, 200);
  t.match(done.body, { type: 'ACCOUNT_EXPORT', completed: true, verificationActionToken: { type: 'ACCOUNT_EXPORT', locked: true } });
  const afterUse = await tokens();
  expectError(t, await confirm(server, fresh), 410, 'error.verification.tokenUsed');
  t.equal(await tokens(), afterUse);
});

t.test('starting an action twice within a minute: 429; a new request replaces the unfinished one', async (t) => {
  const user = await signUp(server);
  t.equal((await server.media('POST', '/v1/users/me/export', user.token)).status, 202);
  const first = await outboxToken(server, user.email, 'verification.ACCOUNT_EXPORT');
  expectError(t, await server.media('POST', '/v1/users/me/export', user.token), 429, 'error.tooManyRequests');
  await ageAll(user.userId);
  t.equal((await server.media('POST', '/v1/users/me/export', user.token)).status, 202);
  expectError(t, await confirm(server, first), 403, 'error.verification.tokenInvalid');
  t.equal((await server.media('GET', '/v1/users/me/verification-tokens', user.token)).body.length, 1);
});

t.test('the session routes need a session: no token or an API key gets 401', async (t) => {
  const user = await signUp(server);
  const team = await teamOwnedBy(server, user);
  for (const [method, path] of [
    ['POST', '/v1/users/me/export'], ['POST', '/v1/users/me/deletion'], ['POST', '/v1/users/me/email'], ['GET', '/v1/users/me/verification-tokens'],
    ['POST', `/v1/teams/${team.teamId}/deletion`], ['POST', `/v1/teams/${team.teamId}/ownership-transfer`],
  ] as const) {
    expectError(t, await server.request(method, path, method === 'POST' ? { body: {} } : {}), 401, 'error.unauthorized');
    expectError(t, await server.media(method, path, team.key, method === 'POST' ? { body: {} } : {}), 401, 'error.unauthorized');
  }
});

t.test('TEAM_OWNERSHIP_TRANSFER: the owner and the new owner confirm; the flags move together with log entries', async (t) => {
  const owner = await signUp(server);
  const next = await signUp(server);
  const outsider = await signUp(server);
  const team = await teamOwnedBy(server, owner);
  const nextMemberId = await join(server, team, next.userId);
  const path = `/v1/teams/${team.teamId}/ownership-transfer`;
  const flags = () => tableSnapshot(server, 'select id, is_team_owner from team_member where team_id = $1 order by id', [team.teamId]);
  const flagsBefore = await flags();

  expectError(t, await server.media('POST', path, outsider.token, { body: { newOwnerId: next.userId } }), 401, 'error.unauthorized');
  expectError(t, await server.media('POST', path, next.token, { body: { newOwnerId: next.userId } }), 403, 'error.forbidden');
  expectError(t, await server.media('POST', path, owner.token, { body: { newOwnerId: outsider.userId } }), 404, 'error.notFound');
  expectError(t, await server.media('POST', path, owner.token, { body: { newOwnerId: owner.userId } }), 409, 'error.conflict');
  expectError(t, await server.media('POST', path, owner.token, { body: {} }), 400, 'error.missingArgument.newOwnerId');
  expectError(t, await server.media('POST', path, owner.token, { body: { newOwnerId: 'x' } }), 400, 'error.badRequest');
  t.equal((await sql(server, 'select count(*)::int as n from verification_action_token where type = $1', ['TEAM_OWNERSHIP_TRANSFER']))[0].n, 0, 'no token made by a refusal');

  const started = await server.media('POST', path, owner.token, { body: { newOwnerId: next.userId } });
  t.equal(started.status, 202);
  const data = { teamId: team.teamId, teamName: 'Team', currentOwnerId: owner.userId, newOwnerId: next.userId, newOwnerName: next.username };
  t.match(started.body, [
    { type: 'TEAM_OWNERSHIP_TRANSFER', userId: owner.userId, data: { ...data, teamName: String, target: 'old' } },
    { type: 'TEAM_OWNERSHIP_TRANSFER', userId: next.userId, data: { ...data, teamName: String, target: 'new' } },
  ]);
  const oldToken = await outboxToken(server, owner.email, 'verification.TEAM_OWNERSHIP_TRANSFER');
  const newToken = await outboxToken(server, next.email, 'verification.TEAM_OWNERSHIP_TRANSFER');
  // Each party sees its own token's progress, in GET /v1/users/me.
  t.match((await server.media('GET', '/v1/users/me', next.token)).body.verificationActionTokens, [{ userId: next.userId, data: { target: 'new' }, usedAt: null }]);

  const first = await confirm(server, newToken);
  t.match(first.body, { completed: false, verificationActionToken: { usedAt: String, locked: false } });
  t.equal(await flags(), flagsBefore, 'nothing moves on the first confirm');
  t.match((await server.media('GET', '/v1/users/me', next.token)).body.verificationActionTokens, [{ usedAt: String, locked: false }]);

  const second = await confirm(server, oldToken);
  t.match(second.body, { type: 'TEAM_OWNERSHIP_TRANSFER', completed: true });
  const owners = await sql(server, 'select id from team_member where team_id = $1 and is_team_owner', [team.teamId]);
  t.same(owners.map((row) => row.id), [nextMemberId], 'exactly one owner: the new one');
  const logs = (await teamLogRows(server, team.teamId)).filter((row) => row.data?.reason === 'TEAM_OWNERSHIP_TRANSFER');
  logs.sort((a, b) => Number(a.data.isTeamOwner) - Number(b.data.isTeamOwner));
  t.match(logs, [
    { action: 'MEMBER_UPDATED', team_member_id: team.ownerMemberId, target_team_member_id: team.ownerMemberId, data: { isTeamOwner: false } },
    { action: 'MEMBER_UPDATED', team_member_id: team.ownerMemberId, target_team_member_id: nextMemberId, data: { isTeamOwner: true } },
  ]);
  t.match((await server.media('GET', '/v1/users/me', owner.token)).body.verificationActionTokens, [{ locked: true }]);
  // The new owner acts as the owner on the team's routes; the old one no longer can start owner actions.
  expectError(t, await server.media('POST', `/v1/teams/${team.teamId}/deletion`, owner.token), 403, 'error.forbidden');
  t.equal((await server.media('POST', `/v1/teams/${team.teamId}/deletion`, next.token)).status, 202);
});

t.test('TEAM_OWNERSHIP_TRANSFER: a new owner who left meanwhile makes the confirm fail (409), nothing changes', async (t) => {
  const owner = await signUp(server);
  const next = await signUp(server);
  const team = await teamOwnedBy(server, owner);
  const nextMemberId = await join(server, team, next.userId);
  t.equal((await server.media('POST', `/v1/teams/${team.teamId}/ownership-transfer`, owner.token, { body: { newOwnerId: next.userId } })).status, 202);
  const oldToken = await outboxToken(server, owner.email, 'verification.TEAM_OWNERSHIP_TRANSFER');
  const newToken = await outboxToken(server, next.email, 'verification.TEAM_OWNERSHIP_TRANSFER');
  t.equal((await confirm(server, oldToken)).status, 200);
  t.equal((await server.media('DELETE', `/v1/teams/${team.teamId}/members/${nextMemberId}`, team.key)).status, 204, 'kicked');
  const before = await tableSnapshot(server, 'select id, is_team_owner, left_team_at from team_member where team_id = $1 order by id', [team.teamId]);
  const tokensBefore = await tokens();
  expectError(t, await confirm(server, newToken), 409, 'error.conflict');
  t.equal(await tableSnapshot(server, 'select id, is_team_owner, left_team_at from team_member where team_id = $1 order by id', [team.teamId]), before);
  t.equal(await tokens(), tokensBefore, 'the token stays unused');
});

t.test('two confirms of an action\'s last tokens at once: the action runs exactly once', async (t) => {
  const owner = await signUp(server);
  const next = await signUp(server);
  const team = await teamOwnedBy(server, owner);
  await join(server, team, next.userId);
  await server.media('POST', `/v1/teams/${team.teamId}/ownership-transfer`, owner.token, { body: { newOwnerId: next.userId } });
  const oldToken = await outboxToken(server, owner.email, 'verification.TEAM_OWNERSHIP_TRANSFER');
  const newToken = await outboxToken(server, next.email, 'verification.TEAM_OWNERSHIP_TRANSFER');
  const answers = await Promise.all([confirm(server, oldToken), confirm(server, newToken), confirm(server, oldToken)]);
  t.same(answers.map((answer) => answer.status).sort(), [200, 200, 410]);
  t.equal(answers.filter((answer) => answer.body.completed === true).length, 1, 'one confirm completed the action');
  const logs = (await teamLogRows(server, team.teamId)).filter((row) => row.data?.reason === 'TEAM_OWNERSHIP_TRANSFER');
  t.equal(logs.length, 2, 'the transfer ran once');
});

t.test('ACCOUNT_DELETE: refused while the user owns a team (when asked and when confirmed); then removes the user', async (t) => {
  const user = await signUp(server);
  const team = await teamOwnedBy(server, user);
  expectError(t, await server.media('POST', '/v1/users/me/deletion', user.token), 409, 'error.conflict');
  t.equal((await sql(server, 'select count(*)::int as n from verification_action_token where user_id = $1 and type = $2', [user.userId, 'ACCOUNT_DELETE']))[0].n, 0);

  // Owner of no team: asked; then made owner again before confirming: refused at confirm.
  await sql(server, 'update team_member set is_team_owner = false where user_id = $1', [user.userId]);
  t.equal((await server.media('POST', '/v1/users/me/deletion', user.token)).status, 202);
  const token = await outboxToken(server, user.email, 'verification.ACCOUNT_DELETE');
  await sql(server, 'update team_member set is_team_owner = true where user_id = $1', [user.userId]);
  const before = await users();
  expectError(t, await confirm(server, token), 409, 'error.conflict');
  t.equal(await users(), before, 'the user stays');

  await sql(server, 'update team_member set is_team_owner = false where user_id = $1', [user.userId]);
  const memberKey = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { teamMemberId: team.ownerMemberId });
  t.not((await server.media('GET', `/v1/cdn/media/${team.teamId}`, memberKey.body.key)).status, 401, 'a key linked to the member authenticates');
  const done = await confirm(server, token);
  t.match(done.body, { type: 'ACCOUNT_DELETE', completed: true });
  for (const table of ['"user" where id', 'account where user_id', 'user_session where user_id', 'team_member where user_id', 'verification_action_token where user_id']) {
    t.equal((await sql(server, `select count(*)::int as n from ${table} = $1`, [user.userId]))[0].n, 0, `no ${table.split(' ')[0]} row`);
  }
  expectError(t, await server.media('GET', '/v1/users/me', user.token), 401, 'error.unauthorized');
  expectError(t, await server.media('GET', `/v1/cdn/media/${team.teamId}`, memberKey.body.key), 401, 'error.unauthorized');
  expectError(t, await server.request('POST', '/v1/auth/sign-in', { body: { login: user.email, password: 'correct horse battery' } }), 401, 'error.unauthorized');
  t.equal((await server.media('GET', `/v1/teams/${team.teamId}`, team.key)).status, 200, 'the team stays');
});

t.test('wrong tokens from one address are throttled (429 with Retry-After); a right one is still served', async (t) => {
  const throttled = await startTestServer(t, { settings: { AUTH_FAILURE_LIMIT_POINTS: 3, AUTH_FAILURE_LIMIT_DURATION_SECONDS: 60 } });
  const user = await signUp(throttled);
  await throttled.media('POST', '/v1/users/me/export', user.token);
  const token = await outboxToken(throttled, user.email, 'verification.ACCOUNT_EXPORT');
  for (let i = 0; i < 3; i++) expectError(t, await confirm(throttled, `tvt_${String(i).repeat(43)}`), 403, 'error.verification.tokenInvalid');
  const refused = await confirm(throttled, `tvt_${'9'.repeat(43)}`);
  expectError(t, refused, 429, 'error.tooManyRequests');
  t.ok(Number(refused.headers.get('retry-after')) > 0);
  expectError(t, await throttled.request('POST', '/v1/auth/verify-email', { body: { token: `tvt_${'8'.repeat(43)}` } }), 429, 'error.tooManyRequests');
  t.equal((await sql(throttled, 'select count(*)::int as n from verification_action_token where used_at is not null', []))[0].n, 0, 'no token was used');
  // Issue 32.1: others' failures from the same address never refuse a valid credential.
  t.match((await confirm(throttled, token)).body, { type: 'ACCOUNT_EXPORT', completed: true }, 'the right token from that address is served');
});

t.test('a disabled user\'s tokens do not confirm (403 error.user.disabled), also the other party\'s of a transfer; nothing changes', async (t) => {
  const owner = await signUp(server);
  const next = await signUp(server);
  const team = await teamOwnedBy(server, owner);
  await join(server, team, next.userId);
  await server.media('POST', `/v1/teams/${team.teamId}/ownership-transfer`, owner.token, { body: { newOwnerId: next.userId } });
  await server.media('POST', '/v1/users/me/export', next.token);
  const oldToken = await outboxToken(server, owner.email, 'verification.TEAM_OWNERSHIP_TRANSFER');
  const exportToken = await outboxToken(server, next.email, 'verification.ACCOUNT_EXPORT');
  t.equal((await server.admin('POST', `/v1/admin/users/${next.userId}/disable`)).status, 200);
  const before = await tokens();
  expectError(t, await confirm(server, exportToken), 403, 'error.user.disabled');
  expectError(t, await confirm(server, oldToken), 403, 'error.user.disabled');
  t.equal(await tokens(), before);
  t.equal((await server.admin('POST', `/v1/admin/users/${next.userId}/enable`)).status, 200);
  t.equal((await confirm(server, oldToken)).status, 200, 'works again once enabled');
});

t.test('ACCOUNT_DELETE: refused while the user pays a team\'s running subscription', async (t) => {
  const user = await signUp(server);
  const owner = await signUp(server);
  const team = await teamOwnedBy(server, owner);
  await join(server, team, user.userId);
  const set = await server.admin('PUT', `/v1/admin/teams/${team.teamId}/subscription`, { userId: user.userId });
  t.equal(set.status, 200, 'the member pays the team\'s subscription');
  expectError(t, await server.media('POST', '/v1/users/me/deletion', user.token), 409, 'error.conflict');
  await sql(server, 'update subscription set ended_at = now() where user_id = $1', [user.userId]);
  t.equal((await server.media('POST', '/v1/users/me/deletion', user.token)).status, 202, 'once it ended');
});
