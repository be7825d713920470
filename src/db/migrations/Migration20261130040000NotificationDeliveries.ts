import { Migration } from '@mikro-orm/migrations';

/**
 * Notification deliveries (spec 2.9): one row per message the service decided to send to a user,
 * or decided not to (SUPPRESSED), with its status (docs/workspace.md, Notification deliveries).
 * The address is kept only as its SHA-256 (`destination_hash`). A mail's outbox row points at its
 * delivery; `gave_up_at` marks an outbox row the sender stopped trying (its delivery is FAILED).
 */
export class Migration20261130040000NotificationDeliveries extends Migration {
  override up(): void {
    this.addSql(`create table "notification_delivery" (
      "id" uuid not null primary key,
      "user_id" uuid not null references "user" ("id") on delete cascade,
      "topic" varchar(32) not null check ("topic" in ('SYSTEM', 'PRODUCT_UPDATES', 'MARKETING')),
      "channel" varchar(32) not null check ("channel" in ('EMAIL', 'DISCORD', 'PUSH')),
      "provider" varchar(16) not null check ("provider" in ('SES', 'BREVO', 'DISCORD')),
      "status" varchar(16) not null check ("status" in ('QUEUED', 'SENT', 'DELIVERED', 'FAILED', 'SUPPRESSED')),
      "provider_message_id" varchar(998) null,
      "error_code" varchar(64) null,
      "error_message" text null,
      "metadata" jsonb null,
      "destination_hash" char(64) null,
      "retention_until" timestamptz not null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null);`);
    // A user's list, newest first, paged by (created_at, id).
    this.addSql(`create index "notification_delivery_user_page_index" on "notification_delivery" ("user_id", "created_at" desc, "id" desc);`);
    this.addSql(`create index "notification_delivery_retention_index" on "notification_delivery" ("retention_until");`);
    this.addSql(`alter table "mail_outbox" add column "delivery_id" uuid null references "notification_delivery" ("id") on delete set null;`);
    // The retention sweep's deletes set it null: found by an index, not a scan of the outbox.
    this.addSql(`create index "mail_outbox_delivery_id_index" on "mail_outbox" ("delivery_id");`);
    this.addSql(`alter table "mail_outbox" add column "gave_up_at" timestamptz null;`);
  }
}
