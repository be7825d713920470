import t from 'tap';
import { ACCOUNT_EXPORT_KEY_LABEL, ACCOUNT_EXPORT_TTL_SECONDS, exportPath } from '../../src/domain/users/account-export.ts';
import { SignedLinks } from '../../src/domain/media/signed-links.ts';
import { confirm, join, PASSWORD, signUp, sql, teamOwnedBy } from '../helpers/accounts.ts';
import { expectError, startTestServer, TEST_AUTH_SECRET } from '../helpers/server.ts';
import { startSmtpServer, type ReceivedMail } from '../helpers/smtp.ts';
import { tableSnapshot } from '../helpers/team-admin.ts';

// Every message goes through a real SMTP server started here; tokens and links are read out of the mails.
const smtp = await startSmtpServer(t);
const server = await startTestServer(t, { settings: { SMTP_URL: smtp.url, MAIL_FROM: 'Media test <no-reply@example.test>', RATE_LIMIT_POINTS: 100_000 } });
const tokenIn = (mail: ReceivedMail) => /tvt_[A-Za-z0-9_-]{43}/.exec(mail.text)![0];
const mailTo = (address: string, subject: string | RegExp) =>
  smtp.waitFor((mail) => mail.to.includes(address) && (typeof subject === 'string' ? mail.subject === subject : subject.test(mail.subject)));

t.test('sign-up: the verification mail arrives over SMTP and its token verifies the address', async (t) => {
  const user = await signUp(server);
  const mail = await mailTo(user.email, 'Confirm your email address');
  t.equal(mail.from, 'no-reply@example.test');
  t.match(mail.text, `${server.baseUrl}/v1/auth/verify-email`);
  t.equal((await server.request('POST', '/v1/auth/verify-email', { body: { token: tokenIn(mail) } })).status, 200);
  const [row] = await sql(server, `select sent_at, attempts from mail_outbox where recipient = $1`, [user.email]);
  t.ok(row.sent_at, 'the outbox row is marked sent');
  t.equal(row.attempts, 1);
});

t.test('ACCOUNT_EMAIL_CHANGE: mails to the old and the new address; the change happens once both confirm; sessions stay', async (t) => {
  const user = await signUp(server);
  const newEmail = `new.${user.username}@example.test`;
  expectError(t, await server.media('POST', '/v1/users/me/email', user.token, { body: { newEmail: 'not an address' } }), 400, 'error.badRequest');
  expectError(t, await server.media('POST', '/v1/users/me/email', user.token, { body: { newEmail: user.email.toUpperCase() } }), 409, 'error.conflict');
  const other = await signUp(server);
  expectError(t, await server.media('POST', '/v1/users/me/email', user.token, { body: { newEmail: other.email.toUpperCase() } }), 409, 'error.conflict');

  const started = await server.media('POST', '/v1/users/me/email', user.token, { body: { newEmail } });
  t.equal(started.status, 202);
  t.match(started.body, [
    { type: 'ACCOUNT_EMAIL_CHANGE', userId: user.userId, data: { newEmail, target: 'old' }, usedAt: null, locked: false },
    { type: 'ACCOUNT_EMAIL_CHANGE', userId: user.userId, data: { newEmail, target: 'new' }, usedAt: null, locked: false },
  ]);
  const toOld = await mailTo(user.email, 'Confirm the change of your email address');
  const toNew = await mailTo(newEmail, 'Confirm your new email address');
  t.match(toOld.text, newEmail);
  t.not(tokenIn(toOld), tokenIn(toNew));

  const first = await confirm(server, tokenIn(toNew));
  t.match(first.body, { type: 'ACCOUNT_EMAIL_CHANGE', completed: false, verificationActionToken: { data: { target: 'new' } } });
  t.equal((await server.media('GET', '/v1/users/me', user.token)).body.email, user.email, 'unchanged after one confirm');
  const progress = (await server.media('GET', '/v1/users/me', user.token)).body.verificationActionTokens;
  progress.sort((a: any, b: any) => a.data.target.localeCompare(b.data.target));
  t.match(progress, [{ data: { target: 'new' }, usedAt: String }, { data: { target: 'old' }, usedAt: null }]);

  const second = await confirm(server, tokenIn(toOld));
  t.match(second.body, { completed: true });
  const me = (await server.media('GET', '/v1/users/me', user.token));
  t.equal(me.status, 200, 'the session still works');
  t.match(me.body, { email: newEmail, isEmailVerified: true, emailVerified: String });
  t.equal((await server.request('POST', '/v1/auth/sign-in', { body: { login: newEmail, password: PASSWORD } })).status, 200, 'signs in with the new address');
  expectError(t, await server.request('POST', '/v1/auth/sign-in', { body: { login: user.email, password: PASSWORD } }), 401, 'error.unauthorized');
  expectError(t, await confirm(server, tokenIn(toOld)), 410, 'error.verification.tokenUsed');
});

t.test('ACCOUNT_EMAIL_CHANGE: the new address taken meanwhile: 409 at the last confirm and nothing changes', async (t) => {
  const user = await signUp(server);
  const newEmail = `wanted.${user.username}@example.test`;
  t.equal((await server.media('POST', '/v1/users/me/email', user.token, { body: { newEmail } })).status, 202);
  const toOld = await mailTo(user.email, 'Confirm the change of your email address');
  const toNew = await mailTo(newEmail, 'Confirm your new email address');
  t.equal((await confirm(server, tokenIn(toOld))).status, 200);
  await signUp(server, { email: newEmail.toUpperCase() });
  const before = await tableSnapshot(server, 'select email, is_email_verified from "user" where id = $1', [user.userId]);
  expectError(t, await confirm(server, tokenIn(toNew)), 409, 'error.conflict');
  t.equal(await tableSnapshot(server, 'select email, is_email_verified from "user" where id = $1', [user.userId]), before);
  t.equal((await sql(server, 'select count(*)::int as n from verification_action_token where user_id = $1 and used_at is null and type = $2', [user.userId, 'ACCOUNT_EMAIL_CHANGE']))[0].n, 1);
});

t.test('ACCOUNT_EXPORT: the link arrives by mail, serves the JSON archive as an attachment, without secrets; altered or expired links fail', async (t) => {
  const user = await signUp(server);
  const owner = await signUp(server);
  const team = await teamOwnedBy(server, owner, 'Exported');
  await join(server, team, user.userId);
  t.equal((await server.media('POST', '/v1/users/me/export', user.token)).status, 202);
  const ask = await mailTo(user.email, 'Confirm the export of your account\'s data');
  t.match((await confirm(server, tokenIn(ask))).body, { type: 'ACCOUNT_EXPORT', completed: true });
  const delivered = await mailTo(user.email, 'Your account data export');
  const link = /http:\/\/\S+/.exec(delivered.text)![0];
  t.ok(link.startsWith(`${server.baseUrl}/v1/account-exports/${user.userId}/`), 'a link to the service');

  const response = await fetch(link);
  t.equal(response.status, 200);
  t.match(response.headers.get('content-disposition'), /^attachment; filename="account-export-[0-9a-f-]+\.json"$/);
  const text = await response.text();
  const archive = JSON.parse(text);
  t.match(archive, {
    user: { id: user.userId, email: user.email, username: user.username },
    accounts: [{ providerId: 'credential', accountId: user.userId }],
    memberships: [{ teamId: team.teamId, teamName: 'Exported', isTeamOwner: false }],
    sessions: [{ id: String, method: 'password' }],
  });
  for (const secret of ['"password":', 'token', 'Token', 'scrypt', 'tss_', 'tvt_']) t.notOk(text.includes(secret), `no ${secret} in the archive`);
  const hash = (await sql(server, 'select password from account where user_id = $1', [user.userId]))[0].password;
  t.notOk(text.includes(hash), 'not the password hash');

  const url = new URL(link);
  const altered = new URL(link);
  altered.searchParams.set('signature', `${url.searchParams.get('signature')!.slice(0, -2)}AA`);
  expectError(t, await server.request('GET', `${altered.pathname}${altered.search}`), 403, 'error.accountExport.linkInvalid');
  const otherUser = new URL(link.replace(user.userId, owner.userId));
  expectError(t, await server.request('GET', `${otherUser.pathname}${otherUser.search}`), 403, 'error.accountExport.linkInvalid');
  expectError(t, await server.request('GET', url.pathname), 403, 'error.accountExport.linkInvalid');
  const later = new URL(link);
  later.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 60));
  expectError(t, await server.request('GET', `${later.pathname}${later.search}`), 403, 'error.accountExport.linkInvalid');

  // A link signed with the service's own key whose hour has passed.
  const signer = new SignedLinks({ secret: TEST_AUTH_SECRET, label: ACCOUNT_EXPORT_KEY_LABEL, ttlSeconds: ACCOUNT_EXPORT_TTL_SECONDS });
  const exportId = url.pathname.split('/').at(-1)!;
  const expired = signer.signUntil(exportPath(user.userId, exportId), Math.floor(Date.now() / 1000) - 1);
  expectError(t, await server.request('GET', `${url.pathname}${expired}`), 410, 'error.accountExport.linkExpired');
  // A media-link signature of the same path does not open it (its own HKDF label).
  const mediaSigned = new SignedLinks({ secret: TEST_AUTH_SECRET }).sign(exportPath(user.userId, exportId));
  expectError(t, await server.request('GET', `${url.pathname}${mediaSigned}`), 403, 'error.accountExport.linkInvalid');
});

t.test('an SMTP failure does not fail the request: the action is recorded, the mail stays unsent with last_error', async (t) => {
  const user = await signUp(server);
  smtp.failing = true;
  t.teardown(() => (smtp.failing = false));
  const started = await server.media('POST', '/v1/users/me/export', user.token);
  t.equal(started.status, 202);
  const [row] = await sql(server, `select sent_at, attempts, last_error from mail_outbox where recipient = $1 and kind = 'verification.ACCOUNT_EXPORT'`, [user.email]);
  t.equal(row.sent_at, null);
  t.equal(row.attempts, 3, 'MAIL_SEND_ATTEMPTS');
  t.match(row.last_error, /451|unavailable/i);
});
