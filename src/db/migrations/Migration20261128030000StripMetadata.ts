import { Migration } from '@mikro-orm/migrations';

/**
 * The team setting `stripMetadata` (issue 35): whether an upload that does not say
 * `stripMetadata` has its images' EXIF, XMP and IPTC stripped. It is read with the team's limits
 * before every upload (TeamStateCache), so a change is announced on `team_limits` like theirs:
 * the trigger of Migration20261123040000GroupCommit watches this column too. An upload URL may fix
 * the option for its upload (`upload_url.strip_metadata`, null: the team's setting decides).
 */
export class Migration20261128030000StripMetadata extends Migration {
  override up(): void {
    this.addSql(`alter table "team" add column "strip_metadata" boolean not null default false;`);
    this.addSql(`alter table "upload_url" add column "strip_metadata" boolean null;`);
    this.addSql(`drop trigger "team_limits_changed" on "team";`);
    this.addSql(`create trigger "team_limits_changed" after update of limit_overrides, plan_id, strip_metadata on "team" for each row
      when (old.limit_overrides is distinct from new.limit_overrides or old.plan_id is distinct from new.plan_id
            or old.strip_metadata is distinct from new.strip_metadata)
      execute function team_limits_notify();`);
  }

  override down(): void {
    this.addSql(`drop trigger "team_limits_changed" on "team";`);
    this.addSql(`create trigger "team_limits_changed" after update of limit_overrides, plan_id on "team" for each row
      when (old.limit_overrides is distinct from new.limit_overrides or old.plan_id is distinct from new.plan_id)
      execute function team_limits_notify();`);
    this.addSql(`alter table "upload_url" drop column "strip_metadata";`);
    this.addSql(`alter table "team" drop column "strip_metadata";`);
  }
}
