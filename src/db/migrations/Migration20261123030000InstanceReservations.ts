import { Migration } from '@mikro-orm/migrations';

/**
 * Which instance (and which start of it) made each upload reservation, so a
 * restarted instance can release its previous incarnation's at once (issue
 * 17.7). Rows made before this migration have neither and age out as before.
 */
export class Migration20261123030000InstanceReservations extends Migration {
  override up(): void {
    this.addSql(`alter table "upload_reservation" add "instance_id" varchar(64) null, add "boot_id" uuid null;`);
    this.addSql(`create index "upload_reservation_instance_idx" on "upload_reservation" ("instance_id");`);
  }
}
