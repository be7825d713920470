import { setTimeout as sleep } from 'node:timers/promises';
import nodemailer, { type Transporter, type TransportOptions } from 'nodemailer';
import type { Logger } from 'pino';
import { mailFailure } from './mail-failure.ts';
import type { MailOutbox, OutboxRow } from './mail-outbox.ts';
import { maskAddress, type MailMessage, type MailSender } from './mail-sender.ts';
import { JobRunner } from '../jobs/job-runner.ts';
import { JOBS } from '../jobs/jobs.ts';

export interface SmtpSettings {
  /** smtp:// or smtps:// with user and password in it when the server needs them. */
  url: string;
  /** The From header, e.g. `Media service <no-reply@example.com>`. */
  from: string;
  /** Attempts within one send() before the row is left for the retry job. */
  attempts: number;
  /** Wait before the second attempt; doubled for each further one. */
  backoffMs: number;
  /** How often the retry job looks for unsent rows (0: never). */
  retryIntervalMs: number;
}

/** The retry job gives up on a message after this many attempts in all, or once it is this old. */
const RETRY_MAX_ATTEMPTS = 10;
const RETRY_MAX_AGE_MS = 24 * 3_600_000;
/** Messages one retry run sends at most (the rest wait for the next run). */
const RETRY_BATCH = 50;
const TIMEOUT_MS = 10_000;

/**
 * SMTP through nodemailer. The outbox row is written first, then the message is sent, with a few
 * attempts and a doubling pause between them; the row records each attempt and, on success,
 * `sent_at`. A message that still fails keeps `last_error` and is retried by `retryUnsent` (every
 * `retryIntervalMs` once started) until it is sent, has had RETRY_MAX_ATTEMPTS, or is a day old.
 * A 5xx reply is a refusal for good: no more attempts. Its notification delivery follows
 * (MailDeliveries): SENT with the Message-ID, or FAILED once the sender gives up.
 */
export class SmtpMailSender implements MailSender {
  private readonly outbox: MailOutbox;
  private readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  private readonly settings: SmtpSettings;
  private readonly transport: Transporter;
  private readonly runner: JobRunner;

  constructor(options: { outbox: MailOutbox; logger: Pick<Logger, 'info' | 'warn' | 'error'>; settings: SmtpSettings }) {
    this.outbox = options.outbox;
    this.logger = options.logger;
    this.settings = options.settings;
    this.transport = nodemailer.createTransport(this.settings.url, {
      connectionTimeout: TIMEOUT_MS, greetingTimeout: TIMEOUT_MS, socketTimeout: TIMEOUT_MS,
    } as TransportOptions);
    this.runner = new JobRunner(JOBS.mailRetry, {
      work: () => this.retryUnsent(),
      onError: (error) => this.logger.error({ err: error }, 'mail retry failed'),
    });
  }

  async send(message: MailMessage): Promise<void> {
    const row = await this.outbox.add(message);
    if (!row) {
      this.logger.info({ kind: message.kind, to: maskAddress(message.to) }, 'mail suppressed by the user\'s notification preferences');
      return;
    }
    for (let attempt = 1; attempt <= this.settings.attempts; attempt++) {
      try {
        const providerMessageId = await this.deliver(row);
        await this.outbox.markSent(row, providerMessageId);
        this.logger.info({ outboxId: row.id, kind: row.kind, to: maskAddress(row.recipient), attempt }, 'mail sent');
        return;
      } catch (error) {
        if (mailFailure(error).permanent) {
          await this.outbox.giveUp(row, error);
          this.logger.warn({ err: error, outboxId: row.id, kind: row.kind, to: maskAddress(row.recipient), attempt }, 'mail refused for good');
          return;
        }
        await this.outbox.markFailed(row.id, error);
        this.logger.warn({ err: error, outboxId: row.id, kind: row.kind, to: maskAddress(row.recipient), attempt }, 'mail not sent');
        if (attempt < this.settings.attempts) await sleep(this.settings.backoffMs * 2 ** (attempt - 1));
      }
    }
  }

  /** Sends the unsent messages still worth a try; answers how many were tried. */
  async retryUnsent(): Promise<number> {
    return this.outbox.retryUnsent({ maxAttempts: RETRY_MAX_ATTEMPTS, maxAgeMs: RETRY_MAX_AGE_MS, limit: RETRY_BATCH }, (row) => this.deliver(row));
  }

  start(): void {
    if (this.settings.retryIntervalMs > 0) this.runner.start(this.settings.retryIntervalMs);
  }

  async stop(): Promise<void> {
    await this.runner.stop();
    this.transport.close();
  }

  /** Hands the message to the SMTP server; answers the Message-ID it accepted it under. */
  private async deliver(row: OutboxRow): Promise<string | null> {
    const info = await this.transport.sendMail({ from: this.settings.from, to: row.recipient, subject: row.subject, text: row.body });
    return typeof info.messageId === 'string' && info.messageId ? info.messageId : null;
  }
}
