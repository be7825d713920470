import { Migration } from '@mikro-orm/migrations';

/**
 * Every key made, rerolled or deleted, by whatever path (a new team, a team's own routes, the
 * operator, a cascade), is announced on the auth-changes channel with its team's id, so every
 * instance's index of key prefixes follows it (ApiKeyAuthenticator).
 */
export class Migration20261127010000ApiKeyChanges extends Migration {
  override up(): void {
    this.addSql(`create function "api_key_changed"() returns trigger language plpgsql as $$
begin
  perform pg_notify('auth_changes', coalesce(new.team_id, old.team_id)::text);
  return null;
end $$;`);
    this.addSql(`create trigger "api_key_changed" after insert or delete or update of "prefix" on "api_key"
  for each row execute function "api_key_changed"();`);
  }
}
