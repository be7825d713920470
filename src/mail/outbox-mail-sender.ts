import type { Logger } from 'pino';
import type { MailOutbox } from './mail-outbox.ts';
import { maskAddress, redactSecrets, type MailMessage, type MailSender } from './mail-sender.ts';

/**
 * No SMTP configured (development, tests, an operator who relays mail another way): the message
 * stays in `mail_outbox` (unsent) and is logged. The log line carries the text with its tokens and
 * signatures shortened (redactSecrets): enough to see that a message went out and what it was
 * about, not enough to use its link. The full text is in the outbox row (`outboxId`).
 */
export class OutboxMailSender implements MailSender {
  private readonly outbox: MailOutbox;
  private readonly logger: Pick<Logger, 'info'>;

  constructor(options: { outbox: MailOutbox; logger: Pick<Logger, 'info'> }) {
    this.outbox = options.outbox;
    this.logger = options.logger;
  }

  async send(message: MailMessage): Promise<void> {
    const row = await this.outbox.add(message);
    if (!row) {
      this.logger.info({ kind: message.kind, to: maskAddress(message.to) }, 'mail suppressed by the user\'s notification preferences');
      return;
    }
    this.logger.info(
      { outboxId: row.id, kind: message.kind, to: maskAddress(message.to), subject: message.subject, text: redactSecrets(message.text) },
      'mail kept in the outbox (no SMTP_URL)',
    );
  }
}
