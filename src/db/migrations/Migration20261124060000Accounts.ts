import { Migration } from '@mikro-orm/migrations';

/**
 * People's accounts (issue 16): linked logins (spec 2.6), sessions, launcher sign-in codes
 * (spec 2.10), verification action tokens (spec 2.7), OAuth sign-in state and the mail outbox.
 * Every secret is stored as its SHA-256 only (session tokens, verification tokens, OAuth state);
 * the credential account's `password` holds a scrypt hash (src/auth/password-hash.ts).
 */
export class Migration20261124060000Accounts extends Migration {
  override up(): void {
    // Emails and usernames compare case-insensitively: one user per address or name however it is typed.
    this.addSql(`create unique index "user_email_lower_unique" on "user" (lower("email"));`);
    this.addSql(`create unique index "user_username_lower_unique" on "user" (lower("username"));`);

    this.addSql(`create table "account" (
      "id" uuid not null primary key,
      "user_id" uuid not null references "user" ("id") on delete cascade,
      "type" varchar(32) not null default 'oauth',
      "provider_id" varchar(64) not null,
      "account_id" varchar(255) not null,
      "expires_at" timestamptz null,
      "access_token" text null,
      "refresh_token" text null,
      "access_token_expires_at" timestamptz null,
      "refresh_token_expires_at" timestamptz null,
      "password" text null,
      "scope" text null,
      "id_token" text null,
      "data" jsonb null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null,
      constraint "account_provider_account_unique" unique ("provider_id", "account_id"),
      constraint "account_user_provider_unique" unique ("user_id", "provider_id"));`);

    this.addSql(`create table "user_session" (
      "id" uuid not null primary key,
      "user_id" uuid not null references "user" ("id") on delete cascade,
      "token_hash" char(64) not null unique,
      "method" varchar(32) not null,
      "created_at" timestamptz not null,
      "last_used_at" timestamptz not null,
      "expires_at" timestamptz not null,
      "ip" varchar(64) null,
      "user_agent" varchar(512) null);`);
    this.addSql(`create index "user_session_user_id_index" on "user_session" ("user_id");`);
    this.addSql(`create index "user_session_expires_at_index" on "user_session" ("expires_at");`);

    // An upload URL made with a session token belongs to that session, as a key's belongs to the key: it dies with it.
    this.addSql(`alter table "upload_url" alter column "key_id" drop not null;`);
    this.addSql(`alter table "upload_url" add column "session_id" uuid null references "user_session" ("id") on delete cascade;`);
    this.addSql(`alter table "upload_url" add constraint "upload_url_one_maker" check (("key_id" is null) <> ("session_id" is null));`);

    this.addSql(`create table "auth_session_code" (
      "id" uuid not null primary key,
      "identifier" varchar(64) not null unique,
      "user_id" uuid null references "user" ("id") on delete cascade,
      "code_challenge" varchar(128) null,
      "client_name" varchar(64) null,
      "expires" timestamptz not null,
      "approved_at" timestamptz null,
      "used_at" timestamptz null,
      "created_at" timestamptz not null);`);
    this.addSql(`create index "auth_session_code_expires_index" on "auth_session_code" ("expires");`);

    this.addSql(`create table "verification_action_token" (
      "id" uuid not null primary key,
      "type" varchar(32) not null,
      "user_id" uuid not null references "user" ("id") on delete cascade,
      "token_hash" char(64) not null unique,
      "data" jsonb null,
      "action_id" uuid not null,
      "expires_at" timestamptz not null,
      "used_at" timestamptz null,
      "locked" boolean not null default false,
      "created_at" timestamptz not null);`);
    this.addSql(`create index "verification_action_token_user_id_index" on "verification_action_token" ("user_id");`);
    this.addSql(`create index "verification_action_token_action_id_index" on "verification_action_token" ("action_id");`);

    this.addSql(`create table "oauth_state" (
      "id" uuid not null primary key,
      "state_hash" char(64) not null unique,
      "provider_id" varchar(64) not null,
      "code_verifier" varchar(128) not null,
      "nonce" varchar(128) null,
      "link_user_id" uuid null references "user" ("id") on delete cascade,
      "return_to" text null,
      "expires_at" timestamptz not null,
      "created_at" timestamptz not null);`);

    this.addSql(`create table "mail_outbox" (
      "id" uuid not null primary key,
      "kind" varchar(64) not null,
      "recipient" varchar(320) not null,
      "subject" text not null,
      "body" text not null,
      "sent_at" timestamptz null,
      "attempts" integer not null default 0,
      "last_error" text null,
      "created_at" timestamptz not null);`);
    this.addSql(`create index "mail_outbox_unsent_index" on "mail_outbox" ("created_at") where "sent_at" is null;`);
  }
}
