import { randomUUID } from 'node:crypto';
import { connectPg, type PgClient } from './database.ts';

/**
 * Gives a team an enabled automation that takes `media.uploaded`, so that its uploads write outbox
 * rows (`media_event`): the batch commit writes them only for such a team. Its tag filter matches
 * no upload, so nothing is ever delivered.
 */
export async function subscribeToUploads(database: string | PgClient, teamId: string): Promise<void> {
  const client = typeof database === 'string' ? await connectPg(database) : database;
  try {
    await client.query(
      `insert into automation (id, created_at, updated_at, team_id, name, kind, url, secret, event_kinds, tags, enabled)
       values ($1, now(), now(), $2, 'outbox test', 'webhook', 'https://hooks.invalid/outbox', 'whsec_test', '["media.uploaded"]', '["never-uploaded-with"]', true)`,
      [randomUUID(), teamId],
    );
  } finally {
    if (typeof database === 'string') await client.end();
  }
}
