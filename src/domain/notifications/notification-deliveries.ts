import { createHash, randomUUID } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { DELIVERY_TRANSITIONS, type DeliveryStatus, type InitialStatus, type LaterStatus } from './delivery-status.ts';
import type { NotificationChannel, NotificationTopic } from './notification-preference.service.ts';

/** Spec 2.9's NotificationProvider. */
export const NOTIFICATION_PROVIDERS = ['SES', 'BREVO', 'DISCORD'] as const;
export type NotificationProvider = (typeof NOTIFICATION_PROVIDERS)[number];

/** A delivery as it is written first. */
export interface NewDelivery {
  userId: string;
  topic: NotificationTopic;
  channel: NotificationChannel;
  provider: NotificationProvider;
  status: InitialStatus;
  /** The address (or other destination); only its hash is stored. */
  destination: string | null;
  /** What the message was about: never a token, a link or an address. */
  metadata: Record<string, string> | null;
}

/** What a later status records besides itself. */
export interface DeliveryOutcome {
  providerMessageId?: string;
  errorCode?: string;
  errorMessage?: string;
}

/** Spec 2.9's NotificationDelivery. */
export interface NotificationDelivery {
  id: string;
  userId: string;
  topic: NotificationTopic;
  channel: NotificationChannel;
  provider: NotificationProvider;
  status: DeliveryStatus;
  createdAt: string;
  updatedAt: string;
  providerMessageId: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  metadata: Record<string, unknown> | null;
  destinationHash: string | null;
  retentionUntil: string | null;
}

interface DeliveryRow {
  id: string;
  user_id: string;
  topic: NotificationTopic;
  channel: NotificationChannel;
  provider: NotificationProvider;
  status: DeliveryStatus;
  provider_message_id: string | null;
  error_code: string | null;
  error_message: string | null;
  metadata: Record<string, unknown> | null;
  destination_hash: string | null;
  retention_until: Date | string;
  created_at: Date | string;
  updated_at: Date | string;
  /** created_at to the microsecond, as the cursor carries it. */
  position: string;
}

/** The position of a delivery in a user's list (newest first): its created_at to the microsecond, then its id. */
export interface DeliveryPosition {
  createdAt: string;
  id: string;
}

const iso = (value: Date | string) => new Date(value).toISOString();

/** SHA-256 of the address as typed for delivery, trimmed and lower-cased: one hash per mailbox however it is written. */
export function destinationHash(destination: string): string {
  return createHash('sha256').update(destination.trim().toLowerCase()).digest('hex');
}

/** Deleted per statement by the retention sweep: short statements, short locks. */
const SWEEP_BATCH = 1000;

/**
 * The `notification_delivery` table (spec 2.9). Every status is written here and only here: a new
 * delivery starts QUEUED or SUPPRESSED, a later status is written only from a status that
 * DELIVERY_TRANSITIONS allows (the condition is in the UPDATE, so of two instances racing, one
 * moves the row and the other changes nothing).
 */
export class NotificationDeliveries {
  private readonly orm: MikroORM;
  private readonly retentionDays: number;

  constructor(options: { orm: MikroORM; retentionDays: number }) {
    this.orm = options.orm;
    this.retentionDays = options.retentionDays;
  }

  /** Writes a new delivery (in `em`'s transaction when given); answers its id. */
  async create(delivery: NewDelivery, em: EntityManager = this.orm.em.fork()): Promise<string> {
    const id = randomUUID();
    await em.execute(
      `insert into notification_delivery
         (id, user_id, topic, channel, provider, status, metadata, destination_hash, retention_until, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, now() + ? * interval '1 day', now(), now())`,
      [
        id, delivery.userId, delivery.topic, delivery.channel, delivery.provider, delivery.status,
        delivery.metadata === null ? null : JSON.stringify(delivery.metadata),
        delivery.destination === null ? null : destinationHash(delivery.destination),
        this.retentionDays,
      ],
    );
    return id;
  }

  /** Moves a delivery to `to` if its status allows it; answers whether it moved. */
  async move(id: string, to: LaterStatus, outcome: DeliveryOutcome = {}, em: EntityManager = this.orm.em.fork()): Promise<boolean> {
    const from = DELIVERY_TRANSITIONS[to];
    const result = await em.execute<{ affectedRows: number }>(
      `update notification_delivery set status = ?, updated_at = now(),
         provider_message_id = coalesce(?, provider_message_id), error_code = coalesce(?, error_code), error_message = coalesce(?, error_message)
       where id = ? and status in (${from.map(() => '?').join(', ')})`,
      [to, outcome.providerMessageId ?? null, outcome.errorCode ?? null, outcome.errorMessage ?? null, id, ...from],
      'run',
    );
    return result.affectedRows === 1;
  }

  /**
   * Up to `limit` of the user's deliveries after `after` (newest first, by created_at then id),
   * each with its position; a delivery past its retention is not listed, swept or not.
   */
  async page(userId: string, limit: number, after: DeliveryPosition | null): Promise<{ delivery: NotificationDelivery; position: DeliveryPosition }[]> {
    const rows = await this.orm.em.fork().execute<DeliveryRow[]>(
      `select *, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as position
         from notification_delivery
        where user_id = ? and retention_until > now()
          ${after ? 'and (created_at, id) < (?::timestamptz, ?::uuid)' : ''}
        order by created_at desc, id desc
        limit ?`,
      [userId, ...(after ? [after.createdAt, after.id] : []), limit],
    );
    return rows.map((row) => ({ delivery: deliveryView(row), position: { createdAt: row.position, id: row.id } }));
  }

  /**
   * Deletes the deliveries past their retention, a batch per statement; answers how many. Any
   * instance may run it at any time: two at once delete each row once, and a repeat deletes nothing.
   */
  async sweepExpired(): Promise<number> {
    let deleted = 0;
    for (;;) {
      const result = await this.orm.em.fork().execute<{ affectedRows: number }>(
        `delete from notification_delivery where id in (select id from notification_delivery where retention_until < now() limit ${SWEEP_BATCH})`,
        [],
        'run',
      );
      deleted += result.affectedRows;
      if (result.affectedRows < SWEEP_BATCH) return deleted;
    }
  }
}

function deliveryView(row: DeliveryRow): NotificationDelivery {
  return {
    id: row.id,
    userId: row.user_id,
    topic: row.topic,
    channel: row.channel,
    provider: row.provider,
    status: row.status,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    providerMessageId: row.provider_message_id,
    errorCode: row.error_code,
    errorMessage: row.error_message,
    metadata: row.metadata,
    destinationHash: row.destination_hash,
    retentionUntil: iso(row.retention_until),
  };
}
