import { Migration } from '@mikro-orm/migrations';

/**
 * The instance (and its boot) holding a thumbnail claim, so that an instance restarting after a
 * crash gives its previous incarnation's claims back at once instead of after their expiry
 * (src/previews/thumbnail-queue.ts). Null on claims made before this migration: they expire.
 */
export class Migration20261130000500ThumbnailClaimOwners extends Migration {
  override up(): void {
    this.addSql(`alter table "media_file" add column "thumbnail_claimed_by" varchar(64) null, add column "thumbnail_claim_boot" uuid null;`);
  }

  override down(): void {
    this.addSql(`alter table "media_file" drop column "thumbnail_claimed_by", drop column "thumbnail_claim_boot";`);
  }
}
