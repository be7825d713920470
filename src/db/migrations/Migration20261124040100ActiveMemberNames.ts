import { Migration } from '@mikro-orm/migrations';

/**
 * A member name is unique among the team's current members only: a member who left or was kicked
 * keeps its (archived) row, but no longer holds its name. (team_id, user_id) stays unique over
 * every row: a user who rejoins gets its archived row back (InviteService.accept).
 */
export class Migration20261124040100ActiveMemberNames extends Migration {
  override up(): void {
    this.addSql(`alter table "team_member" drop constraint "team_member_team_id_name_unique";`);
    this.addSql(`create unique index "team_member_team_id_name_active_unique" on "team_member" ("team_id", "name") where "left_team_at" is null;`);
  }

  override down(): void {
    this.addSql(`drop index "team_member_team_id_name_active_unique";`);
    this.addSql(`alter table "team_member" add constraint "team_member_team_id_name_unique" unique ("team_id", "name");`);
  }
}
