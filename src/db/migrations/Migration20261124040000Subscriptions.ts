import { Migration } from '@mikro-orm/migrations';

/**
 * Subscriptions of spec 2.14, as data set by the operator (no payment provider): one per team and
 * type. The subscription job (src/domain/subscriptions/subscription-job.ts) finds the ones due to
 * end through the two partial indexes. A team's plan change already NOTIFYs team_limits
 * (team_limits_changed in Migration20261123040000GroupCommit watches plan_id), so whatever sets
 * the plan (operator route, job, SQL) reaches every instance's limits cache on commit.
 */
export class Migration20261124040000Subscriptions extends Migration {
  override up(): void {
    this.addSql(`create table "subscription" (
      "id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null,
      "subscription_id" varchar(255) not null, "price_id" varchar(255) not null, "user_id" uuid not null,
      "checked_at" timestamptz not null, "last_payment_failed" boolean not null default false,
      "type" varchar(8) not null default 'TEAM' check ("type" in ('TEAM', 'VOICE')),
      "billing_cycle" varchar(8) not null default 'MONTHLY' check ("billing_cycle" in ('MONTHLY', 'YEARLY')),
      "next_payment_at" timestamptz null, "ends_at" timestamptz null, "canceled_at" timestamptz null,
      "pending_price_id" varchar(255) null,
      "pending_billing_cycle" varchar(8) null check ("pending_billing_cycle" in ('MONTHLY', 'YEARLY')),
      "stripe_schedule_id" varchar(255) null, "team_id" uuid null, "plan_id" uuid null,
      "is_trialing" boolean not null default false, "trial_ends_at" timestamptz null, "ended_at" timestamptz null,
      primary key ("id"));`);
    this.addSql(`alter table "subscription" add constraint "subscription_team_type_unique" unique ("team_id", "type");`);
    this.addSql(`create index "subscription_user_id_index" on "subscription" ("user_id");`);
    this.addSql(`alter table "subscription" add constraint "subscription_user_id_foreign" foreign key ("user_id") references "user" ("id") on delete cascade;`);
    this.addSql(`alter table "subscription" add constraint "subscription_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`alter table "subscription" add constraint "subscription_plan_id_foreign" foreign key ("plan_id") references "plan" ("id") on delete set null;`);
    // What the job looks for: canceled ones reaching their end, trials reaching theirs.
    this.addSql(`create index "subscription_cancel_due_idx" on "subscription" ((coalesce("ends_at", "canceled_at"))) where "ended_at" is null and "canceled_at" is not null;`);
    this.addSql(`create index "subscription_trial_due_idx" on "subscription" ("trial_ends_at") where "ended_at" is null and "is_trialing";`);
  }

  override down(): void {
    this.addSql(`drop table if exists "subscription";`);
  }
}
