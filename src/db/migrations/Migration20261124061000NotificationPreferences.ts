import { Migration } from '@mikro-orm/migrations';

/**
 * A user's notification preferences (spec 2.9): one row per topic and channel the user has set;
 * a pair without a row has its default (docs/accounts.md#notification-preferences).
 */
export class Migration20261124061000NotificationPreferences extends Migration {
  override up(): void {
    this.addSql(`create table "notification_preference" (
      "user_id" uuid not null references "user" ("id") on delete cascade,
      "topic" varchar(32) not null check ("topic" in ('SYSTEM', 'PRODUCT_UPDATES', 'MARKETING')),
      "channel" varchar(32) not null check ("channel" in ('EMAIL', 'DISCORD', 'PUSH')),
      "enabled" boolean not null,
      "frequency" varchar(16) not null check ("frequency" in ('INSTANT', 'DAILY', 'WEEKLY', 'MONTHLY', 'MUTE')),
      "confirmed_at" timestamptz null,
      "updated_at" timestamptz not null,
      primary key ("user_id", "topic", "channel"),
      constraint "notification_preference_system_email_on" check (not ("topic" = 'SYSTEM' and "channel" = 'EMAIL' and not "enabled")));`);
  }
}
