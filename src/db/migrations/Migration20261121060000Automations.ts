import { Migration } from '@mikro-orm/migrations';

/**
 * Automations: a team's webhook targets, their deliveries, and the outbox
 * bookkeeping the dispatcher needs (src/automation-delivery/dispatcher.ts).
 *
 * - `automation`: one target. `folder_id` is a plain id on purpose: a deleted
 *   folder's filter then matches nothing instead of widening to every file.
 * - `automation_delivery`: one event for one target, unique per
 *   (automation, event) so a fan-out that runs twice never sends twice.
 *   `seq` (identity, assigned in fan-out order) is the per-target order; the
 *   partial index on open deliveries serves the "oldest open delivery of each
 *   target" test of the claim query and stays small.
 * - `media_event.fanned_out`: whether the fan-out has turned the event into
 *   deliveries. Added with default true, then the default switched to false:
 *   events written before this migration count as handled (they predate every
 *   automation) without rewriting the table, and new rows start unhandled.
 * - A statement-level trigger NOTIFYs `automation_events` when events are
 *   written for a team that has an enabled automation; PostgreSQL delivers it
 *   on commit, to every instance, so the dispatchers wake at once without the
 *   upload path knowing about them. Only for such teams: a transaction that
 *   NOTIFYs holds PostgreSQL's global notification lock through its commit, so
 *   notifying on every upload would serialise every upload commit of the
 *   cluster. Other teams' events are marked by the next dispatcher run.
 */
export class Migration20261121060000Automations extends Migration {
  override up(): void {
    this.addSql(`create table "automation" ("id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "team_id" uuid not null, "name" varchar(100) not null, "kind" varchar(16) not null, "url" varchar(2048) not null, "secret" varchar(128) not null, "event_kinds" jsonb not null, "folder_id" uuid null, "include_subfolders" boolean not null default false, "tags" jsonb not null, "enabled" boolean not null default true, primary key ("id"));`);
    this.addSql(`create index "automation_team_created_idx" on "automation" ("team_id", "created_at");`);
    this.addSql(`alter table "automation" add constraint "automation_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "automation" add constraint "automation_name_check" check (length(name) >= 1);`);
    this.addSql(`alter table "automation" add constraint "automation_kind_check" check (kind in ('webhook', 'discord'));`);
    this.addSql(`alter table "automation" add constraint "automation_event_kinds_check" check (jsonb_typeof(event_kinds) = 'array');`);
    this.addSql(`alter table "automation" add constraint "automation_tags_check" check (jsonb_typeof(tags) = 'array');`);

    this.addSql(`create table "automation_delivery" ("id" uuid not null, "seq" bigint generated always as identity, "automation_id" uuid not null, "event_id" uuid not null, "status" varchar(16) not null default 'pending', "attempts" int not null default 0, "next_attempt_at" timestamptz not null, "locked_until" timestamptz null, "last_status" int null, "last_error" text null, "delivered_at" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "automation_delivery" add constraint "automation_delivery_automation_event_unique" unique ("automation_id", "event_id");`);
    this.addSql(`alter table "automation_delivery" add constraint "automation_delivery_automation_id_foreign" foreign key ("automation_id") references "automation" ("id") on delete cascade;`);
    this.addSql(`alter table "automation_delivery" add constraint "automation_delivery_event_id_foreign" foreign key ("event_id") references "media_event" ("id") on delete cascade;`);
    this.addSql(`alter table "automation_delivery" add constraint "automation_delivery_status_check" check (status in ('pending', 'delivering', 'delivered', 'failed'));`);
    this.addSql(`alter table "automation_delivery" add constraint "automation_delivery_attempts_check" check (attempts >= 0);`);
    this.addSql(`create index "automation_delivery_event_id_index" on "automation_delivery" ("event_id");`);
    // Listing a target's deliveries, newest first.
    this.addSql(`create index "automation_delivery_automation_seq_idx" on "automation_delivery" ("automation_id", "seq");`);
    // The dispatcher's claim: open deliveries per target in order.
    this.addSql(`create index "automation_delivery_open_idx" on "automation_delivery" ("automation_id", "seq") where status in ('pending', 'delivering');`);
    // Pruning finished deliveries past the retention.
    this.addSql(`create index "automation_delivery_finished_idx" on "automation_delivery" ("updated_at") where status in ('delivered', 'failed');`);

    this.addSql(`alter table "media_event" add column "fanned_out" boolean not null default true;`);
    this.addSql(`alter table "media_event" alter column "fanned_out" set default false;`);
    this.addSql(`create index "media_event_fanout_idx" on "media_event" ("occurred_at", "id") where not fanned_out;`);

    this.addSql(`create function automation_events_notify() returns trigger language plpgsql as $$
begin
  if exists (select 1 from inserted_events i join automation a on a.team_id = i.team_id and a.enabled) then
    perform pg_notify('automation_events', '');
  end if;
  return null;
end
$$;`);
    this.addSql(`create trigger "media_event_notify_automations" after insert on "media_event" referencing new table as inserted_events for each statement execute function automation_events_notify();`);
  }

  override down(): void {
    this.addSql(`drop trigger if exists "media_event_notify_automations" on "media_event";`);
    this.addSql(`drop function if exists automation_events_notify();`);
    this.addSql(`drop index if exists "media_event_fanout_idx";`);
    this.addSql(`alter table "media_event" drop column if exists "fanned_out";`);
    this.addSql(`drop table if exists "automation_delivery";`);
    this.addSql(`drop table if exists "automation";`);
  }
}
