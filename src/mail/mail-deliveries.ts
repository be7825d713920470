import type { EntityManager } from '@mikro-orm/postgresql';
import type { NotificationDeliveries, NotificationProvider } from '../domain/notifications/notification-deliveries.ts';
import type { NotificationPreferenceService } from '../domain/notifications/notification-preference.service.ts';
import type { MailFailure } from './mail-failure.ts';
import type { MailMessage } from './mail-sender.ts';

/**
 * The notification deliveries (spec 2.9) of the service's mail: each message to a user gets one,
 * QUEUED with its outbox row, or SUPPRESSED instead of one when the user's preferences refuse its
 * topic by email; SENT once the SMTP server accepts it, FAILED once the sender gives up.
 */
export class MailDeliveries {
  private readonly deliveries: NotificationDeliveries;
  private readonly preferences: NotificationPreferenceService;
  private readonly provider: NotificationProvider;

  constructor(options: { deliveries: NotificationDeliveries; preferences: NotificationPreferenceService; provider: NotificationProvider }) {
    this.deliveries = options.deliveries;
    this.preferences = options.preferences;
    this.provider = options.provider;
  }

  /** Whether the message may go out; one the user's preferences refuse is recorded SUPPRESSED here and never sent. */
  async admit(message: MailMessage): Promise<boolean> {
    const { notification } = message;
    if (!notification || (await this.preferences.allows(notification.userId, notification.topic, 'EMAIL'))) return true;
    await this.deliveries.create(this.newDelivery(message, 'SUPPRESSED'));
    return false;
  }

  /** The QUEUED delivery of an admitted message, in the transaction of its outbox row; null for a message to no user. */
  async queue(message: MailMessage, em: EntityManager): Promise<string | null> {
    return message.notification ? this.deliveries.create(this.newDelivery(message, 'QUEUED'), em) : null;
  }

  async sent(deliveryId: string | null, providerMessageId: string | null, em: EntityManager): Promise<void> {
    if (deliveryId) await this.deliveries.move(deliveryId, 'SENT', providerMessageId ? { providerMessageId } : {}, em);
  }

  async failed(deliveryId: string | null, failure: Pick<MailFailure, 'code' | 'message'>, em: EntityManager): Promise<void> {
    if (deliveryId) await this.deliveries.move(deliveryId, 'FAILED', { errorCode: failure.code, errorMessage: failure.message }, em);
  }

  private newDelivery(message: MailMessage, status: 'QUEUED' | 'SUPPRESSED') {
    const { userId, topic } = message.notification!;
    // What the message was about, never its text: that holds the token or link.
    return { userId, topic, channel: 'EMAIL' as const, provider: this.provider, status, destination: message.to, metadata: { kind: message.kind, subject: message.subject } };
  }
}
