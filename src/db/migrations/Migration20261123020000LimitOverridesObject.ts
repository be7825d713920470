import { Migration } from '@mikro-orm/migrations';

/**
 * team.limit_overrides is a JSON object of limit names. Teams created before this fix got the JSON
 * string "{}" (the entity's string default, serialised), and a later PATCH of their limits spread
 * that string into the object as the junk keys "0": "{", "1": "}". Repairs both (no limit name is
 * a number) and adds a check so that nothing but an object is stored again.
 */
export class Migration20261123020000LimitOverridesObject extends Migration {
  override up(): void {
    this.addSql(`update "team" set "limit_overrides" = '{}'::jsonb where jsonb_typeof("limit_overrides") <> 'object';`);
    this.addSql(`update "team" set "limit_overrides" = "limit_overrides" - array(select k from jsonb_object_keys("limit_overrides") as k where k ~ '^[0-9]+$')
      where exists (select 1 from jsonb_object_keys("limit_overrides") as k where k ~ '^[0-9]+$');`);
    this.addSql(`alter table "team" add constraint "team_limit_overrides_check" check (jsonb_typeof("limit_overrides") = 'object');`);
  }

  override down(): void {
    this.addSql(`alter table "team" drop constraint "team_limit_overrides_check";`);
  }
}
