import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { MailDeliveries } from './mail-deliveries.ts';
import { MailOutbox } from './mail-outbox.ts';
import type { MailSender } from './mail-sender.ts';
import { OutboxMailSender } from './outbox-mail-sender.ts';

export interface MailSettings {
  smtpUrl: string | null;
  /** The spec's provider named in the mail's notification deliveries (MAIL_PROVIDER): SMTP itself is none of SES, BREVO, DISCORD. */
  provider: 'SES' | 'BREVO';
  from: string;
  sendAttempts: number;
  backoffMs: number;
  retryIntervalMs: number;
}

/** A sender with a life cycle: the SMTP sender's retry job starts and stops with the service. */
export interface ManagedMailSender extends MailSender {
  start(): void;
  stop(): Promise<void>;
}

/**
 * SMTP when SMTP_URL is set, otherwise the outbox and the log. The SMTP sender (and nodemailer, ~40
 * modules) is imported only when configured: every process start, cli command and test pays for
 * what it imports.
 */
export async function createMailSender(options: { orm: MikroORM; logger: Logger; settings: MailSettings; deliveries: MailDeliveries }): Promise<ManagedMailSender> {
  const { orm, logger, settings } = options;
  const outbox = new MailOutbox({ orm, deliveries: options.deliveries });
  const log = logger.child({ component: 'mail' });
  if (settings.smtpUrl) {
    const { SmtpMailSender } = await import('./smtp-mail-sender.ts');
    return new SmtpMailSender({
      outbox,
      logger: log,
      settings: {
        url: settings.smtpUrl, from: settings.from, attempts: settings.sendAttempts, backoffMs: settings.backoffMs, retryIntervalMs: settings.retryIntervalMs,
      },
    });
  }
  const sender = new OutboxMailSender({ outbox, logger: log });
  return { send: (message) => sender.send(message), start: () => undefined, stop: async () => undefined };
}
