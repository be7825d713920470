import type { MikroORM } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
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
}

const toRow = (raw: RawRow): OutboxRow => ({
  id: raw.id, kind: raw.kind, recipient: raw.recipient, subject: raw.subject, body: raw.body,
  sentAt: raw.sent_at === null ? null : new Date(raw.sent_at), attempts: Number(raw.attempts), lastError: raw.last_error, createdAt: new Date(raw.created_at),
});

/** The longest `last_error` kept: an SMTP answer can be long, the first lines say why. */
const MAX_ERROR_LENGTH = 1000;

/**
 * Once delivered, a message's secrets (tokens, link signatures) are shortened in its row as in the
 * log: the mail is the only place they are needed, so a copy of the database holds no usable token
 * of a delivered message. An unsent message keeps its full text, for the retries and the operator.
 */
const SENT = `sent_at = now(), attempts = attempts + 1, last_error = null, body = ?`;

/** The `mail_outbox` table: every message the service sends, with its delivery state. */
export class MailOutbox {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  async add(message: MailMessage): Promise<OutboxRow> {
    const rows = await this.orm.em.fork().execute<RawRow[]>(
      `insert into mail_outbox (id, kind, recipient, subject, body, created_at) values (?, ?, ?, ?, ?, now()) returning *`,
      [randomUUID(), message.kind, message.to, message.subject, message.text],
    );
    return toRow(rows[0]!);
  }

  async markSent(row: OutboxRow): Promise<void> {
    await this.orm.em.fork().execute(`update mail_outbox set ${SENT} where id = ?`, [redactSecrets(row.body), row.id]);
  }

  async markFailed(id: string, error: unknown): Promise<void> {
    const text = (error instanceof Error ? error.message : String(error)).slice(0, MAX_ERROR_LENGTH);
    await this.orm.em.fork().execute(`update mail_outbox set attempts = attempts + 1, last_error = ? where id = ?`, [text, id]);
  }

  /**
   * Runs `deliver` for each unsent message younger than `maxAgeMs` with fewer than `maxAttempts`
   * attempts, oldest first, each inside a transaction holding its row (`for update skip locked`),
   * so two instances retrying at once never send one message twice.
   */
  async retryUnsent(options: { maxAttempts: number; maxAgeMs: number; limit: number }, deliver: (row: OutboxRow) => Promise<void>): Promise<number> {
    let handled = 0;
    for (; handled < options.limit; handled++) {
      const done = await this.orm.em.fork().transactional(async (em) => {
        const rows = await em.execute<RawRow[]>(
          `select * from mail_outbox where sent_at is null and attempts < ? and created_at > ? order by created_at limit 1 for update skip locked`,
          [options.maxAttempts, new Date(Date.now() - options.maxAgeMs)],
        );
        const raw = rows[0];
        if (!raw) return false;
        try {
          await deliver(toRow(raw));
          await em.execute(`update mail_outbox set ${SENT} where id = ?`, [redactSecrets(raw.body), raw.id]);
        } catch (error) {
          const text = (error instanceof Error ? error.message : String(error)).slice(0, MAX_ERROR_LENGTH);
          await em.execute(`update mail_outbox set attempts = attempts + 1, last_error = ? where id = ?`, [text, raw.id]);
        }
        return true;
      });
      if (!done) break;
    }
    return handled;
  }
}
