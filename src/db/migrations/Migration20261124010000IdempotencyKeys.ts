import { Migration } from '@mikro-orm/migrations';

/**
 * Idempotent requests (src/domain/idempotency): one row per (team, Idempotency-Key).
 *
 * - `state` 'running': claimed by `claim_id`, a request of the instance `instance_id` in its start
 *   `boot_id` (InstanceIdentity); 'completed': `status`, `headers` and `body` (the answer's JSON
 *   text, byte for byte) are what a retry gets again.
 * - `route` and `request_fingerprint` are fixed at the claim (what the request says before its
 *   body); `content_fingerprint` is written with the answer (what its body said), so a retry can
 *   be told from another request that reuses the key.
 * - `expires_at`: 24 hours after the claim; an expired row no longer holds its key and is deleted
 *   by the sweep.
 *
 * `idempotency_claim` claims a key in one call (one round trip before the body): it inserts a
 * running claim, or locks and answers the existing row; a row that expired, or a running claim
 * whose process is gone (an earlier boot of the claiming instance, or an instance whose
 * InstanceIdentity advisory lock no session holds), is taken over.
 *
 * `media_commit_uploads_idempotent` wraps `media_commit_uploads` for a batch in which some uploads
 * carry a claim (`idem_key`, `idem_claim`, `idem_fingerprint`, `answer`): in the same transaction
 * it locks the team row (the order of every upload commit and of a team's deletion, which cascades
 * to these rows), then the claims; an upload whose claim is no longer its own running claim is not
 * committed (`claim_lost`); the others go through `media_commit_uploads` unchanged, and each one
 * committed completes its claim with its answer: `answer` (the media view as JSON text) with
 * `usedTeamStorage` appended, exactly the body the upload route answers. So a file is never
 * committed without its answer recorded, nor its answer recorded without the file.
 */
export class Migration20261124010000IdempotencyKeys extends Migration {
  override up(): void {
    this.addSql(`create table "idempotency_key" (
  "team_id" uuid not null,
  "key" varchar(255) not null,
  "route" varchar(255) not null,
  "request_fingerprint" varchar(64) not null,
  "content_fingerprint" varchar(64) null,
  "state" varchar(16) not null check ("state" in ('running', 'completed')),
  "claim_id" uuid not null,
  "instance_id" varchar(64) null,
  "boot_id" uuid null,
  "status" smallint null,
  "headers" jsonb null,
  "body" text null,
  "created_at" timestamptz not null,
  "expires_at" timestamptz not null,
  primary key ("team_id", "key"));`);
    this.addSql(`alter table "idempotency_key" add constraint "idempotency_key_team_id_foreign" foreign key ("team_id") references "team" ("id") on delete cascade;`);
    this.addSql(`create index "idempotency_key_expires_idx" on "idempotency_key" ("expires_at");`);
    this.addSql(`create index "idempotency_key_instance_idx" on "idempotency_key" ("instance_id") where "state" = 'running';`);

    // The lock key is InstanceIdentity's (src/bootstrap/instance-identity.ts, LOCK_SQL): a running claim
    // whose instance holds no such lock belongs to a process that is gone.
    this.addSql(`create function idempotency_claim(p_team_id uuid, p_key text, p_route text, p_fingerprint text, p_claim uuid, p_instance text, p_boot uuid)
returns table (o_claimed boolean, o_route text, o_request_fingerprint text, o_content_fingerprint text, o_state text, o_status int, o_headers jsonb, o_body text)
language plpgsql as $$
declare
  r record;
  v_free boolean;
begin
  loop
    insert into idempotency_key (team_id, key, route, request_fingerprint, state, claim_id, instance_id, boot_id, created_at, expires_at)
    values (p_team_id, p_key, p_route, p_fingerprint, 'running', p_claim, p_instance, p_boot, now(), now() + interval '24 hours')
    on conflict (team_id, key) do nothing;
    if found then
      return query select true, p_route, p_fingerprint, null::text, 'running'::text, null::int, null::jsonb, null::text;
      return;
    end if;
    select * into r from idempotency_key k where k.team_id = p_team_id and k.key = p_key for no key update;
    if found then
      v_free := r.expires_at <= now()
        or (r.state = 'running' and (
              (p_instance is not null and r.instance_id = p_instance and r.boot_id is distinct from p_boot)
           or (r.instance_id is not null and not exists (
                 select 1 from pg_locks l
                  where l.locktype = 'advisory' and l.granted and l.objsubid = 1
                    and l.database = (select d.oid from pg_database d where d.datname = current_database())
                    and l.classid = ((hashtextextended('media-instance:' || r.instance_id, 0) >> 32) & 4294967295)::oid
                    and l.objid = (hashtextextended('media-instance:' || r.instance_id, 0) & 4294967295)::oid))));
      if not v_free then
        return query select false, r.route::text, r.request_fingerprint::text, r.content_fingerprint::text, r.state::text, r.status::int, r.headers, r.body;
        return;
      end if;
      update idempotency_key k
         set route = p_route, request_fingerprint = p_fingerprint, content_fingerprint = null, state = 'running', claim_id = p_claim,
             instance_id = p_instance, boot_id = p_boot, status = null, headers = null, body = null,
             created_at = now(), expires_at = now() + interval '24 hours'
       where k.team_id = p_team_id and k.key = p_key;
      return query select true, p_route, p_fingerprint, null::text, 'running'::text, null::int, null::jsonb, null::text;
      return;
    end if;
    -- deleted between the insert and the select (its request failed): try again
  end loop;
end
$$;`);

    this.addSql(`create function media_commit_uploads_idempotent(p_team_id uuid, p_uploads jsonb, p_default_storage_kib bigint, p_default_file_bytes bigint)
returns table (o_media_id uuid, o_outcome text, o_used_storage bigint, o_max_file bigint)
language plpgsql as $$
declare
  v_lost uuid[];
  v_rest jsonb;
  r record;
begin
  perform 1 from team t where t.id = p_team_id for no key update of t;
  perform 1 from idempotency_key k
    join jsonb_to_recordset(p_uploads) as u(idem_key text) on k.team_id = p_team_id and k.key = u.idem_key
   order by k.key
     for no key update of k;
  select coalesce(array_agg(u.media_id), '{}') into v_lost
    from jsonb_to_recordset(p_uploads) as u(media_id uuid, idem_key text, idem_claim uuid)
   where u.idem_key is not null
     and not exists (select 1 from idempotency_key k
                      where k.team_id = p_team_id and k.key = u.idem_key and k.claim_id = u.idem_claim and k.state = 'running');
  select coalesce(jsonb_agg(e), '[]'::jsonb) into v_rest
    from jsonb_array_elements(p_uploads) as e
   where not ((e ->> 'media_id')::uuid = any(v_lost));

  for r in select * from media_commit_uploads(p_team_id, v_rest, p_default_storage_kib, p_default_file_bytes) loop
    if r.o_outcome = 'committed' then
      update idempotency_key k
         set state = 'completed', status = 201, content_fingerprint = u.idem_fingerprint,
             body = left(u.answer, -1) || ',"usedTeamStorage":' || r.o_used_storage || '}'
        from jsonb_to_recordset(p_uploads) as u(media_id uuid, idem_key text, idem_claim uuid, idem_fingerprint text, answer text)
       where u.media_id = r.o_media_id and u.idem_key is not null
         and k.team_id = p_team_id and k.key = u.idem_key and k.claim_id = u.idem_claim;
    end if;
    o_media_id := r.o_media_id;
    o_outcome := r.o_outcome;
    o_used_storage := r.o_used_storage;
    o_max_file := r.o_max_file;
    return next;
  end loop;

  return query select lost, 'claim_lost'::text, null::bigint, null::bigint from unnest(v_lost) as lost;
end
$$;`);
  }

  override down(): void {
    this.addSql(`drop function if exists media_commit_uploads_idempotent(uuid, jsonb, bigint, bigint);`);
    this.addSql(`drop function if exists idempotency_claim(uuid, text, text, text, uuid, text, uuid);`);
    this.addSql(`drop table if exists "idempotency_key";`);
  }
}
