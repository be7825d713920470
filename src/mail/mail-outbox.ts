import type { MikroORM } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { MailDeliveries } from './mail-deliveries.ts';
import { mailFailure, maskAddresses } from './mail-failure.ts';
import { redactSecrets, type MailMessage } from './mail-sender.ts';

export interface OutboxRow {
  id: string;
  kind: string;
  recipient: string;
  subject: string;
  body: string;
  sentAt: Date | null;
  attempts: number;
  lastError: string | null;
  createdAt: Date;
  /** Its notification delivery (spec 2.9); null for a message to no user, or once the delivery is past its retention. */
  deliveryId: string | null;
}

interface RawRow {
  id: string;
  kind: string;
  recipient: string;
  subject: string;
  body: string;
  sent_at: Date | string | null;
  attempts: number;
  last_error: string | null;
  created_at: Date | string;
  delivery_id: string | null;
}

const toRow = (raw: RawRow): OutboxRow => ({
  id: raw.id, kind: raw.kind, recipient: raw.recipient, subject: raw.subject, body: raw.body,
  sentAt: raw.sent_at === null ? null : new Date(raw.sent_at), attempts: Number(raw.attempts), lastError: raw.last_error, createdAt: new Date(raw.created_at),
  deliveryId: raw.delivery_id,
});

/** The longest `last_error` kept: an SMTP answer can be long, the first lines say why. */
const MAX_ERROR_LENGTH = 1000;

/**
 * Once delivered, a message's secrets (tokens, link signatures) are shortened in its row as in the
 * log: the mail is the only place they are needed, so a copy of the database holds no usable token
 * of a delivered message. An unsent message keeps its full text, for the retries and the operator.
 */
const SENT = `sent_at = now(), attempts = attempts + 1, last_error = null, body = ?`;

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, MAX_ERROR_LENGTH);

/** What a sender's attempt answers: the provider's id of the accepted message (the SMTP Message-ID). */
export type Deliver = (row: OutboxRow) => Promise<string | null>;

/**
 * The `mail_outbox` table: every message the service sends, with its delivery state, and the
 * notification delivery of each (MailDeliveries) kept in step with it in the same transaction.
 */
export class MailOutbox {
  private readonly orm: MikroORM;
  private readonly deliveries: MailDeliveries;

  constructor(options: { orm: MikroORM; deliveries: MailDeliveries }) {
    this.orm = options.orm;
    this.deliveries = options.deliveries;
  }

  /** Records a message to send; null when the user's preferences refuse it (its delivery is SUPPRESSED, nothing is sent). */
  async add(message: MailMessage): Promise<OutboxRow | null> {
    if (!(await this.deliveries.admit(message))) return null;
    return this.orm.em.fork().transactional(async (em) => {
      const deliveryId = await this.deliveries.queue(message, em);
      const rows = await em.execute<RawRow[]>(
        `insert into mail_outbox (id, kind, recipient, subject, body, created_at, delivery_id) values (?, ?, ?, ?, ?, now(), ?) returning *`,
        [randomUUID(), message.kind, message.to, message.subject, message.text, deliveryId],
      );
      return toRow(rows[0]!);
    });
  }

  async markSent(row: OutboxRow, providerMessageId: string | null): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      await em.execute(`update mail_outbox set ${SENT} where id = ?`, [redactSecrets(row.body), row.id]);
      await this.deliveries.sent(row.deliveryId, providerMessageId, em);
    });
  }

  /** An attempt failed; the message stays for another. */
  async markFailed(id: string, error: unknown): Promise<void> {
    await this.orm.em.fork().execute(`update mail_outbox set attempts = attempts + 1, last_error = ? where id = ?`, [errorText(error), id]);
  }

  /** An attempt failed for good (the server refused the message): no more attempts, its delivery FAILED. */
  async giveUp(row: OutboxRow, error: unknown): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      await em.execute(`update mail_outbox set attempts = attempts + 1, last_error = ?, gave_up_at = now() where id = ?`, [errorText(error), row.id]);
      await this.deliveries.failed(row.deliveryId, mailFailure(error), em);
    });
  }

  /**
   * Runs `deliver` for each unsent message younger than `maxAgeMs` with fewer than `maxAttempts`
   * attempts, oldest first, each inside a transaction holding its row (`for update skip locked`),
   * so two instances retrying at once never send one message twice. A message past either bound,
   * or refused for good, is given up: its delivery becomes FAILED.
   */
  async retryUnsent(options: { maxAttempts: number; maxAgeMs: number; limit: number }, deliver: Deliver): Promise<number> {
    await this.giveUpExhausted(options);
    let handled = 0;
    for (; handled < options.limit; handled++) {
      const done = await this.orm.em.fork().transactional(async (em) => {
        const rows = await em.execute<RawRow[]>(
          `select * from mail_outbox where sent_at is null and gave_up_at is null and attempts < ? and created_at > ? order by created_at limit 1 for update skip locked`,
          [options.maxAttempts, new Date(Date.now() - options.maxAgeMs)],
        );
        const raw = rows[0];
        if (!raw) return false;
        const row = toRow(raw);
        try {
          const providerMessageId = await deliver(row);
          await em.execute(`update mail_outbox set ${SENT} where id = ?`, [redactSecrets(raw.body), raw.id]);
          await this.deliveries.sent(row.deliveryId, providerMessageId, em);
        } catch (error) {
          const failure = mailFailure(error);
          await em.execute(
            `update mail_outbox set attempts = attempts + 1, last_error = ?, gave_up_at = case when ? then now() end where id = ?`,
            [errorText(error), failure.permanent, raw.id],
          );
          if (failure.permanent) await this.deliveries.failed(row.deliveryId, failure, em);
        }
        return true;
      });
      if (!done) break;
    }
    return handled;
  }

  /** Gives up the unsent messages out of attempts or too old (each once, whichever instance gets there first). */
  private async giveUpExhausted(options: { maxAttempts: number; maxAgeMs: number }): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const given = await em.execute<{ delivery_id: string | null; last_error: string | null }[]>(
        `update mail_outbox set gave_up_at = now()
          where sent_at is null and gave_up_at is null and (attempts >= ? or created_at <= ?)
          returning delivery_id, last_error`,
        [options.maxAttempts, new Date(Date.now() - options.maxAgeMs)],
      );
      for (const row of given) {
        await this.deliveries.failed(row.delivery_id, { code: 'RETRIES_EXHAUSTED', message: redactSecrets(maskAddresses(row.last_error ?? 'not sent in time')).slice(0, 500) }, em);
      }
    });
  }
}
