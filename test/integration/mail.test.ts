import t from 'tap';
import { createLogger } from '../../src/logging/logger.ts';
import { MailDeliveries } from '../../src/mail/mail-deliveries.ts';
import { MailOutbox } from '../../src/mail/mail-outbox.ts';
import { maskAddress, redactSecrets } from '../../src/mail/mail-sender.ts';
import { OutboxMailSender } from '../../src/mail/outbox-mail-sender.ts';
import { SmtpMailSender } from '../../src/mail/smtp-mail-sender.ts';
import { tableSnapshot } from '../helpers/team-admin.ts';
import { startTestServer } from '../helpers/server.ts';
import { startSmtpServer } from '../helpers/smtp.ts';

// One service for its migrated database; the senders under test are built on its ORM.
const server = await startTestServer(t);
const { orm, notificationDeliveries, notificationPreferences } = server.app.services;
// These messages are to no user (`notification: null`): notification-deliveries.test.ts covers the deliveries.
const outbox = new MailOutbox({ orm, deliveries: new MailDeliveries({ deliveries: notificationDeliveries, preferences: notificationPreferences, provider: 'SES' }) });
const silent = createLogger('silent');
const rowOf = async (recipient: string) => JSON.parse(await tableSnapshot(server, 'select * from mail_outbox where recipient = $1', [recipient]))[0];
const LINK = 'http://127.0.0.1:1/v1/users/exports/abc?expires=1893456000&signature=Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5';

t.test('SMTP: the message arrives with its recipient, subject and link; the outbox row is marked sent', async (t) => {
  const smtp = await startSmtpServer(t);
  const sender = new SmtpMailSender({ outbox, logger: silent, settings: { url: smtp.url, from: 'Media test <no-reply@example.test>', attempts: 2, backoffMs: 10, retryIntervalMs: 0 } });
  t.teardown(() => sender.stop());
  await sender.send({ kind: 'test.link', notification: null, to: 'alice@example.test', subject: 'Your export', text: `Download it here:\n${LINK}\n` });
  const mail = await smtp.waitFor((m) => m.to.includes('alice@example.test'));
  t.equal(mail.subject, 'Your export');
  t.equal(mail.from, 'no-reply@example.test');
  t.match(mail.raw, /^From: Media test <no-reply@example\.test>/m);
  t.ok(mail.text.includes(LINK), 'the link arrives whole');
  const row = await rowOf('alice@example.test');
  t.match(row, { kind: 'test.link', subject: 'Your export', attempts: 1, last_error: null });
  t.ok(row.sent_at, 'marked sent');
  t.notOk(row.body.includes('Zm9vYmFyYmF6cXV4'), 'once sent, the outbox row no longer holds the signature');
  t.ok(row.body.includes('signature=Zm9v…'), 'only its first characters');
});

t.test('SMTP failure: the row stays unsent with last_error and its attempts; the retry job sends it later', async (t) => {
  const smtp = await startSmtpServer(t);
  smtp.failing = true;
  const sender = new SmtpMailSender({ outbox, logger: silent, settings: { url: smtp.url, from: 'no-reply@example.test', attempts: 3, backoffMs: 20, retryIntervalMs: 0 } });
  t.teardown(() => sender.stop());
  const started = Date.now();
  await sender.send({ kind: 'test.fail', notification: null, to: 'bob@example.test', subject: 'Hello', text: 'hello' });
  t.ok(Date.now() - started >= 60, 'backed off between attempts (20 + 40 ms)');
  const failed = await rowOf('bob@example.test');
  t.equal(failed.sent_at, null, 'not sent');
  t.equal(failed.attempts, 3);
  t.match(failed.last_error, /451|temporarily unavailable/i);
  t.equal(failed.body, 'hello', 'an unsent message keeps its full text');
  t.equal(smtp.received.length, 0);

  smtp.failing = false;
  t.ok((await sender.retryUnsent()) >= 1);
  const mail = await smtp.waitFor((m) => m.to.includes('bob@example.test'));
  t.equal(mail.subject, 'Hello');
  const sent = await rowOf('bob@example.test');
  t.ok(sent.sent_at, 'sent by the retry');
  t.equal(sent.attempts, 4);
  t.equal(sent.last_error, null);
  t.equal(await sender.retryUnsent(), 0, 'nothing left to retry');
});

t.test('the retry job, once started, sends what failed without being asked', async (t) => {
  const smtp = await startSmtpServer(t);
  smtp.failing = true;
  const sender = new SmtpMailSender({ outbox, logger: silent, settings: { url: smtp.url, from: 'no-reply@example.test', attempts: 1, backoffMs: 0, retryIntervalMs: 100 } });
  t.teardown(() => sender.stop());
  await sender.send({ kind: 'test.job', notification: null, to: 'gina@example.test', subject: 'Later', text: 'later' });
  t.equal((await rowOf('gina@example.test')).sent_at, null);
  sender.start();
  smtp.failing = false;
  await smtp.waitFor((m) => m.to.includes('gina@example.test'));
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.ok((await rowOf('gina@example.test')).sent_at, 'sent by the job');
  t.equal(smtp.received.filter((m) => m.to.includes('gina@example.test')).length, 1, 'once');
});

t.test('SMTP server unreachable: the row records the connection error', async (t) => {
  const sender = new SmtpMailSender({ outbox, logger: silent, settings: { url: 'smtp://127.0.0.1:1', from: 'no-reply@example.test', attempts: 1, backoffMs: 0, retryIntervalMs: 0 } });
  t.teardown(() => sender.stop());
  await sender.send({ kind: 'test.down', notification: null, to: 'carol@example.test', subject: 'Hi', text: 'hi' });
  const row = await rowOf('carol@example.test');
  t.equal(row.sent_at, null);
  t.equal(row.attempts, 1);
  t.match(row.last_error, /ECONNREFUSED|connect/i);
});

t.test('no SMTP: the outbox keeps the message unsent and the log shows it with its secrets shortened', async (t) => {
  const lines: any[] = [];
  const logger = { info: ((fields: any, message: string) => lines.push({ ...fields, message })) as any };
  const sender = new OutboxMailSender({ outbox, logger });
  await sender.send({ kind: 'test.outbox', notification: null, to: 'dave@example.test', subject: 'Confirm', text: `Open ${LINK}` });
  const row = await rowOf('dave@example.test');
  t.match(row, { kind: 'test.outbox', subject: 'Confirm', sent_at: null, attempts: 0 });
  t.ok(row.body.includes(LINK));
  t.equal(lines.length, 1);
  t.match(lines[0], { outboxId: row.id, kind: 'test.outbox', to: 'da…@example.test', subject: 'Confirm' });
  t.notOk(lines[0].text.includes('Zm9vYmFyYmF6cXV4'), 'the signature is not in the log');
  t.ok(lines[0].text.includes('signature=Zm9v…'), 'only its first characters are');
});

t.test('redaction and masking', async (t) => {
  t.equal(redactSecrets('token tvt_abcdefghijklmnopqrstuvwxyz0123 ok'), 'token tvt_… ok');
  t.equal(redactSecrets('short abc123'), 'short abc123');
  t.equal(maskAddress('alice@example.test'), 'al…@example.test');
  t.equal(maskAddress('a@x.test'), 'a…@x.test');
  t.equal(maskAddress('nonsense'), '…');
});

t.test('the service uses the outbox without SMTP_URL and SMTP with it', async (t) => {
  await server.app.services.mail.send({ kind: 'test.service', notification: null, to: 'erin@example.test', subject: 'S', text: 'x' });
  t.equal((await rowOf('erin@example.test')).sent_at, null);
  const smtp = await startSmtpServer(t);
  const withSmtp = await startTestServer(t, { settings: { SMTP_URL: smtp.url, MAIL_FROM: 'Svc <svc@example.test>' } });
  await withSmtp.app.services.mail.send({ kind: 'test.service', notification: null, to: 'frank@example.test', subject: 'Via SMTP', text: 'y' });
  const mail = await smtp.waitFor((m) => m.to.includes('frank@example.test'));
  t.equal(mail.subject, 'Via SMTP');
  t.equal(mail.from, 'svc@example.test');
});
