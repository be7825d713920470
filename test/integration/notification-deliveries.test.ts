import { createHash } from 'node:crypto';
import t from 'tap';
import type { SmtpMailSender } from '../../src/mail/smtp-mail-sender.ts';
import { signUp, sql, type SignedUp } from '../helpers/accounts.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { startSmtpServer } from '../helpers/smtp.ts';

// Every mail goes through a real SMTP server; a second instance on the same database runs the
// retry job and the retention sweep at the same moment as the first.
const smtp = await startSmtpServer(t);
const settings = {
  SMTP_URL: smtp.url, MAIL_FROM: 'Media test <no-reply@example.test>', MAIL_SEND_ATTEMPTS: 2, MAIL_BACKOFF_MS: 10,
  MAIL_RETRY_INTERVAL_SECONDS: 0, NOTIFICATION_RETENTION_DAYS: 30, RATE_LIMIT_POINTS: 100_000,
};
const server = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: server.databaseUrl });
const DELIVERIES = '/v1/users/me/notifications/deliveries';
const DAY_MS = 86_400_000;

const list = (user: SignedUp, query = '') => server.media('GET', `${DELIVERIES}${query}`, user.token);
const rowsOf = (userId: string) => sql(server, 'select * from notification_delivery where user_id = $1 order by created_at', [userId]);
const hashOf = (address: string) => createHash('sha256').update(address.toLowerCase()).digest('hex');
const mailer = (instance: typeof server) => instance.app.services.mail as SmtpMailSender;
const productUpdate = (user: SignedUp, topic: 'PRODUCT_UPDATES' | 'MARKETING' = 'PRODUCT_UPDATES') => server.app.services.mail.send({
  kind: `test.${topic}`, to: user.email, subject: `News (${topic})`, text: 'What is new', notification: { userId: user.userId, topic },
});

t.test('a verification mail: QUEUED, then SENT with the SMTP Message-ID; no address, token or text stored', async (t) => {
  const user = await signUp(server, { email: `Sent.${process.pid}@Example.test` });
  const mail = await smtp.waitFor((m) => m.to.some((address) => address.toLowerCase() === user.email.toLowerCase()));
  const answer = await list(user);
  t.equal(answer.status, 200);
  t.equal(answer.body.items.length, 1);
  t.equal(answer.body.nextCursor, null);
  const [delivery] = answer.body.items;
  t.match(delivery, {
    userId: user.userId, topic: 'SYSTEM', channel: 'EMAIL', provider: 'SES', status: 'SENT',
    errorCode: null, errorMessage: null, metadata: { kind: 'verification.EMAIL_VERIFY', subject: 'Confirm your email address' },
    destinationHash: hashOf(user.email),
  });
  const messageId = /^Message-ID:\s*(<[^>]+>)/im.exec(mail.raw)?.[1];
  t.ok(messageId, 'the mail carries a Message-ID');
  t.equal(delivery.providerMessageId, messageId, 'the Message-ID the server accepted');
  t.equal(Date.parse(delivery.retentionUntil) - Date.parse(delivery.createdAt), 30 * DAY_MS, 'kept NOTIFICATION_RETENTION_DAYS');
  const token = /tvt_[A-Za-z0-9_-]{43}/.exec(mail.text)![0];
  const stored = JSON.stringify(await rowsOf(user.userId)).toLowerCase();
  t.notOk(stored.includes(user.email.toLowerCase()), 'no address in the row');
  t.notOk(stored.includes(token.toLowerCase()), 'no token in the row');
  t.notOk(stored.includes('/v1/auth/verify-email'), 'no link in the row');
  const [outbox] = await sql(server, 'select delivery_id from mail_outbox where recipient = $1', [user.email]);
  t.equal(outbox.delivery_id, delivery.id, 'the outbox row names its delivery');
});

t.test('the SMTP server refuses the recipient (550): FAILED at once, no retry, the address masked in the error', async (t) => {
  const email = `refused.${process.pid}@example.test`;
  smtp.refused.add(email);
  const user = await signUp(server, { email });
  const [delivery] = (await list(user)).body.items;
  t.match(delivery, { status: 'FAILED', errorCode: 'SMTP_550', providerMessageId: null, destinationHash: hashOf(email) });
  t.match(delivery.errorMessage, /Recipient address rejected/);
  t.notOk(delivery.errorMessage.includes(email), 'the address is masked');
  t.ok(delivery.errorMessage.includes('re…@example.test'));
  const [outbox] = await sql(server, 'select attempts, gave_up_at, sent_at from mail_outbox where recipient = $1', [email]);
  t.equal(outbox.attempts, 1, 'a refusal for good is not tried again (MAIL_SEND_ATTEMPTS is 2)');
  t.ok(outbox.gave_up_at);
  smtp.refused.delete(email);
  await mailer(server).retryUnsent();
  t.equal((await list(user)).body.items[0].status, 'FAILED', 'the retry job leaves it alone');
  t.notOk(smtp.received.some((m) => m.to.includes(email)), 'never sent');
});

t.test('a temporary refusal (451) stays QUEUED; two instances retrying at once send it once; SENT', async (t) => {
  smtp.failing = true;
  const user = await signUp(server);
  t.match((await list(user)).body.items, [{ status: 'QUEUED', errorCode: null, providerMessageId: null }], 'QUEUED after MAIL_SEND_ATTEMPTS');
  smtp.failing = false;
  await Promise.all([mailer(server).retryUnsent(), mailer(second).retryUnsent()]);
  await smtp.waitFor((m) => m.to.includes(user.email));
  t.equal(smtp.received.filter((m) => m.to.includes(user.email)).length, 1, 'sent once');
  t.match((await list(user)).body.items, [{ status: 'SENT', providerMessageId: /^<.+>$/ }]);
});

t.test('out of attempts: the retry job gives up (FAILED RETRIES_EXHAUSTED), once across two instances', async (t) => {
  smtp.failing = true;
  t.teardown(() => { smtp.failing = false; });
  const user = await signUp(server);
  await sql(server, 'update mail_outbox set attempts = 10 where recipient = $1', [user.email]);
  await Promise.all([mailer(server).retryUnsent(), mailer(second).retryUnsent()]);
  const [delivery] = (await list(user)).body.items;
  t.match(delivery, { status: 'FAILED', errorCode: 'RETRIES_EXHAUSTED', errorMessage: /451|temporarily unavailable/i });
});

t.test('a topic the user has not consented to is SUPPRESSED and never sent; with consent it is sent; withdrawn, suppressed again', async (t) => {
  const user = await signUp(server);
  await productUpdate(user);
  const news = (subject: string) => smtp.received.filter((m) => m.to.includes(user.email) && m.subject === subject).length;
  t.equal(news('News (PRODUCT_UPDATES)'), 0, 'not sent');
  const suppressed = (await list(user)).body.items[0];
  t.match(suppressed, { topic: 'PRODUCT_UPDATES', status: 'SUPPRESSED', providerMessageId: null, metadata: { kind: 'test.PRODUCT_UPDATES' }, destinationHash: hashOf(user.email) });
  t.equal((await sql(server, 'select count(*)::int as n from mail_outbox where recipient = $1 and kind = $2', [user.email, 'test.PRODUCT_UPDATES']))[0].n, 0, 'nothing queued');

  const consent = await server.media('PUT', '/v1/users/me/notification-settings', user.token, { body: { preferences: [{ topic: 'PRODUCT_UPDATES', channel: 'EMAIL', enabled: true }] } });
  t.equal(consent.status, 200);
  await productUpdate(user);
  t.equal(news('News (PRODUCT_UPDATES)'), 1, 'sent with consent');
  t.match((await list(user)).body.items[0], { topic: 'PRODUCT_UPDATES', status: 'SENT' });

  await server.media('PUT', '/v1/users/me/notification-settings', user.token, { body: { preferences: [{ topic: 'PRODUCT_UPDATES', channel: 'EMAIL', frequency: 'MUTE' }] } });
  await productUpdate(user);
  t.equal(news('News (PRODUCT_UPDATES)'), 1, 'muted: not sent');
  t.match((await list(user)).body.items[0], { topic: 'PRODUCT_UPDATES', status: 'SUPPRESSED' });
  await productUpdate(user, 'MARKETING');
  t.match((await list(user)).body.items[0], { topic: 'MARKETING', status: 'SUPPRESSED' });
});

t.test('transitions: only the table\'s are written; of two at once, one wins', async (t) => {
  const user = await signUp(server);
  await productUpdate(user);
  const deliveries = server.app.services.notificationDeliveries;
  const status = async (id: string) => (await sql(server, 'select status from notification_delivery where id = $1', [id]))[0].status;
  const [suppressed] = (await list(user)).body.items;
  for (const to of ['SENT', 'DELIVERED', 'FAILED'] as const) t.equal(await deliveries.move(suppressed.id, to), false, `SUPPRESSED → ${to} refused`);
  t.equal(await status(suppressed.id), 'SUPPRESSED');

  const queued = await deliveries.create({ userId: user.userId, topic: 'SYSTEM', channel: 'EMAIL', provider: 'SES', status: 'QUEUED', destination: user.email, metadata: null });
  t.equal(await deliveries.move(queued, 'DELIVERED'), false, 'QUEUED → DELIVERED refused');
  const both = (to: 'SENT' | 'DELIVERED' | 'FAILED', other: 'SENT' | 'DELIVERED' | 'FAILED') => Promise.all([
    server.app.services.notificationDeliveries.move(queued, to, { providerMessageId: '<a@x>' }),
    second.app.services.notificationDeliveries.move(queued, other, { errorCode: 'X' }),
  ]);
  t.same((await both('SENT', 'SENT')).filter(Boolean).length, 1, 'QUEUED → SENT on two instances at once: written once');
  t.equal(await status(queued), 'SENT');
  t.equal(await deliveries.move(queued, 'SENT'), false, 'SENT → SENT refused');
  const [delivered, failed] = await both('DELIVERED', 'FAILED');
  t.equal(Number(delivered) + Number(failed), 1, 'SENT → DELIVERED and SENT → FAILED at once: one is written');
  const won = await status(queued);
  t.equal(won, delivered ? 'DELIVERED' : 'FAILED');
  for (const to of ['SENT', 'DELIVERED', 'FAILED'] as const) t.equal(await deliveries.move(queued, to), false, `${won} → ${to} refused`);
  t.equal(await status(queued), won);
});

t.test('the list: newest first, cursor pages without gaps or repeats, only the caller\'s; bad input 400', async (t) => {
  const user = await signUp(server);
  const other = await signUp(server);
  for (let i = 0; i < 4; i++) await productUpdate(user);
  const all = (await rowsOf(user.userId)).length;
  t.equal(all, 5, 'the verification mail and four suppressed');

  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: any = await list(user, `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    t.equal(page.status, 200);
    t.ok(page.body.items.length <= 2);
    seen.push(...page.body.items.map((item: any) => item.id));
    cursor = page.body.nextCursor;
    pages++;
  } while (cursor && pages < 10);
  t.equal(pages, 3);
  const expected = (await sql(server, 'select id from notification_delivery where user_id = $1 order by created_at desc, id desc', [user.userId])).map((row) => row.id);
  t.same(seen, expected, 'every delivery once, newest first');
  t.notOk((await list(other)).body.items.some((item: any) => seen.includes(item.id)), 'another user sees none of them');
  const full = await list(user, '?limit=5');
  t.equal(full.body.items.length, 5);
  t.equal(full.body.nextCursor, null, 'no next page when all fit');

  for (const query of ['?limit=0', '?limit=101', '?limit=abc', '?limit=1.5']) {
    const answer = await list(user, query);
    expectError(t, answer, 400, 'error.badRequest');
    t.equal(answer.body.value, 'limit');
  }
  const forged = Buffer.from(JSON.stringify(['not a time', seen[0]])).toString('base64url');
  for (const query of ['?cursor=%21%21', `?cursor=${forged}`, '?cursor=bm90IGpzb24']) {
    const answer = await list(user, query);
    expectError(t, answer, 400, 'error.badRequest');
    t.equal(answer.body.value, 'cursor');
  }
  expectError(t, await server.request('GET', DELIVERIES), 401, 'error.unauthorized');
  const team = await server.createTeam('Keyed');
  expectError(t, await server.media('GET', DELIVERIES, team.key), 401, 'error.unauthorized');
});

t.test('retention: past retentionUntil a delivery is no longer listed; the sweep deletes it, on two instances at once', async (t) => {
  const user = await signUp(server);
  for (let i = 0; i < 3; i++) await productUpdate(user);
  const [keep, ...expire] = (await rowsOf(user.userId)).map((row) => row.id).reverse();
  await sql(server, `update notification_delivery set retention_until = now() - interval '1 second' where id = any($1)`, [expire]);
  t.same((await list(user)).body.items.map((item: any) => item.id), [keep], 'expired ones are not listed before the sweep');
  const before = (await sql(server, 'select count(*)::int as n from notification_delivery'))[0].n;
  const [first, other] = await Promise.all([server.app.services.expiredRows.runOnce(), second.app.services.expiredRows.runOnce()]);
  t.equal((first['notification_delivery'] ?? 0) + (other['notification_delivery'] ?? 0), expire.length, 'the two sweeps deleted each once');
  t.equal((await sql(server, 'select count(*)::int as n from notification_delivery'))[0].n, before - expire.length, 'those and no others');
  t.same((await rowsOf(user.userId)).map((row) => row.id), [keep]);
  t.equal((await server.app.services.expiredRows.runOnce())['notification_delivery'], 0, 'a repeat deletes nothing');
  t.equal((await sql(server, 'select count(*)::int as n from mail_outbox where delivery_id = any($1)', [expire]))[0].n, 0);
});
