import { Migration } from '@mikro-orm/migrations';
import { TYPES } from './Migration20261128020500VideoPosters.ts';

/**
 * Less work per small file's rows (issue 38), measured with `bench/batch-commit.ts` (docs/performance.md):
 *
 * - On a server built without lz4 (the embedded PostgreSQL the service starts by default is one),
 *   small files' bytes are stored uncompressed (storage `external`). pglz, the only other
 *   compression, cost PostgreSQL ~60-70 µs of CPU per 8 KiB log upload there, about a third of the
 *   batch commit, to halve what a log takes on disk. Rows written before keep their pglz values,
 *   which read as before. A server with lz4 keeps compressing with it (storage `main`).
 * - The thumbnail queue's trigger fires only for the types it queues (a `when` clause): every other
 *   row skipped a PL/pgSQL call per insert.
 */
const quoted = TYPES.map((type) => `'${type}'`).join(', ');

export class Migration20261207010000SmallFileRows extends Migration {
  override up(): void {
    this.addSql(`do $$
begin
  alter table "media_content" alter column "content" set compression lz4;
exception when feature_not_supported then
  alter table "media_content" alter column "content" set storage external;
end
$$;`);
    // The `when` clause is now the one place that decides; the function only marks the row.
    this.addSql(`create or replace function media_file_queue_thumbnail() returns trigger language plpgsql as $$
begin
  new.thumbnail_status := 'pending';
  return new;
end $$;`);
    this.addSql('drop trigger if exists "media_file_queue_thumbnail" on "media_file";');
    this.addSql(`create trigger "media_file_queue_thumbnail" before insert on "media_file" for each row
  when (new.content_type in (${quoted})) execute function media_file_queue_thumbnail();`);
  }

  override down(): void {
    this.addSql('drop trigger if exists "media_file_queue_thumbnail" on "media_file";');
    this.addSql(`create or replace function media_file_queue_thumbnail() returns trigger language plpgsql as $$
begin
  if new.content_type in (${quoted}) then
    new.thumbnail_status := 'pending';
  end if;
  return new;
end $$;`);
    this.addSql('create trigger "media_file_queue_thumbnail" before insert on "media_file" for each row execute function media_file_queue_thumbnail();');
    this.addSql(`alter table "media_content" alter column "content" set storage main;`);
  }
}
