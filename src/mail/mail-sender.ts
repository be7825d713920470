import type { NotificationTopic } from '../domain/notifications/notification-preference.service.ts';

/** One message of the service to one person: plain text, no attachments. */
export interface MailMessage {
  /** What the message is for (e.g. `verification.ACCOUNT_DELETE`); kept in the outbox and the log. */
  kind: string;
  to: string;
  subject: string;
  text: string;
  /**
   * The user it is for and its topic: the message then has a notification delivery (spec 2.9) and
   * is sent only if the user's preferences take the topic by email. Null for a message to no user.
   */
  notification: { userId: string; topic: NotificationTopic } | null;
}

/**
 * Sends the service's messages. Every sender records the message in `mail_outbox` first, so what
 * was sent, and what failed and why, stays visible; `send` resolves once the message is recorded
 * (and, with SMTP, delivered or given up on for now: a failure never throws to the caller, the
 * row keeps `last_error` and the retry job picks it up).
 */
export interface MailSender {
  send(message: MailMessage): Promise<void>;
}

/**
 * Shortens what looks like a secret (a run of 20 or more base64url characters: tokens, link
 * signatures, ids) to its first 4 characters, for the log. The full text stays in the outbox,
 * which only database operators read; logs travel further (collectors, dashboards, support).
 */
export function redactSecrets(text: string): string {
  return text.replace(/[A-Za-z0-9_-]{20,}/g, (secret) => `${secret.slice(0, 4)}…`);
}

/** `ab…@example.com`: enough for an operator to tell messages apart, not a list of addresses. */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 1) return '…';
  return `${address.slice(0, Math.min(2, at))}…${address.slice(at)}`;
}
