import type { Test } from 'tap';
import { ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { connectPg } from '../helpers/database.ts';
import type { CreatedTeam, TestServer } from '../helpers/server.ts';
import { s3, s3Client, type Driver } from '../helpers/storage.ts';
import { tusMetadata, tusRequest } from '../helpers/tus.ts';
import { heldUpload, MiB, pngLike, send, uploadJson } from '../helpers/uploads.ts';

const dataUri = (content: Buffer, type = 'image/png') => `data:${type};base64,${content.toString('base64')}`;

/**
 * Gives a team something of every kind that lives in storage: media files, a team file, a to-do
 * file, and an unfinished resumable upload with a stored part and a tail (6 of 8 MiB). Answers
 * the tus upload's id (its temp file / tail object is named by it, not by the team).
 */
export async function fillTeam(t: Test, server: TestServer, team: CreatedTeam): Promise<{ tusId: string }> {
  const base = `/v1/teams/${team.teamId}`;
  for (const name of ['one.png', 'two.png']) {
    const uploaded = await uploadJson(server, team.teamId, team.key, { file: dataUri(pngLike(3000)), fileName: name, public: name === 'one.png' });
    t.equal(uploaded.status, 201, `media ${name}`);
  }
  const teamFile = await send(server, 'POST', `${base}/files`, team.key, Buffer.from(JSON.stringify({ file: dataUri(Buffer.from('notes')), fileName: 'notes.txt' })), {
    'content-type': 'application/json',
  });
  t.equal(teamFile.status, 201, 'team file');
  const board = await server.media('POST', `${base}/todo-boards`, team.key, { body: { title: 'Board' } });
  const todo = await server.media('POST', `${base}/todo-boards/${board.body.id}/todos`, team.key, { body: { title: 'Do it' } });
  t.equal(todo.status, 201, 'to-do');
  const todoFile = await send(server, 'POST', `${base}/todos/${todo.body.id}/files`, team.key, Buffer.from(JSON.stringify({ file: dataUri(Buffer.from('todo')), fileName: 't.txt' })), {
    'content-type': 'application/json',
  });
  t.equal(todoFile.status, 201, 'to-do file');
  const created = await tusRequest(server, 'POST', `/v1/cdn/media/${team.teamId}/tus`, team.key, {
    'upload-length': String(8 * MiB), 'upload-metadata': tusMetadata({ filename: 'big.png' }),
  });
  t.equal(created.status, 201, 'tus upload created');
  const path = new URL(created.headers.get('location')!, server.baseUrl).pathname;
  const patched = await tusRequest(server, 'PATCH', path, team.key, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, pngLike(6 * MiB));
  t.equal(patched.status, 204, 'tus upload half done');
  return { tusId: path.split('/').at(-1)! };
}

/** Rows naming the team, in every table that has a team_id column (and the team itself). */
export async function rowsOfTeam(server: TestServer, teamId: string): Promise<Record<string, number>> {
  const client = await connectPg(server.databaseUrl);
  try {
    const tables = await client.query<{ table_name: string }>(
      `select table_name from information_schema.columns where table_schema = 'public' and column_name = 'team_id' order by table_name`,
    );
    const counts: Record<string, number> = {};
    for (const { table_name } of tables.rows) {
      const { rows } = await client.query(`select count(*)::int as n from "${table_name}" where team_id = $1`, [teamId]);
      if (rows[0].n > 0) counts[table_name] = rows[0].n;
    }
    const team = await client.query('select count(*)::int as n from team where id = $1', [teamId]);
    if (team.rows[0].n > 0) counts.team = team.rows[0].n;
    return counts;
  } finally {
    await client.end();
  }
}

async function walk(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

/** Everything storage holds that belongs to the team: objects under its prefixes, in-progress writes, the tus upload's parts. */
export async function storageOfTeam(driver: Driver, dataDir: string, teamId: string, tusId: string): Promise<string[]> {
  if (driver === 'fs') return (await walk(join(dataDir, 'files'))).filter((file) => file.includes(teamId) || file.includes(tusId));
  const found: string[] = [];
  for (const prefix of [`media/${teamId}/`, `team-files/${teamId}/`, `todo-files/${teamId}/`, `tus/${tusId}`]) {
    const listed = await s3Client().send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
    found.push(...(listed.Contents ?? []).map((object) => `object ${object.Key}`));
    const uploads = await s3Client().send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: prefix }));
    found.push(...(uploads.Uploads ?? []).map((upload) => `multipart ${upload.Key}`));
  }
  return found;
}

/** TEAM_DELETE end to end through the routes, on one storage driver. */
export async function teamDeleteFlow(t: Test, driver: Driver): Promise<void> {
  const { startTestServer, expectError } = await import('../helpers/server.ts');
  const { closeS3Client, driverSettings } = await import('../helpers/storage.ts');
  const { confirm, join, outboxToken, signUp, sql, teamOwnedBy } = await import('../helpers/accounts.ts');
  const { startWebhookReceiver } = await import('../helpers/webhook-receiver.ts');
  const cdn = await startWebhookReceiver(t);
  const server = await startTestServer(t, {
    settings: { ...driverSettings(driver), RATE_LIMIT_POINTS: 100_000, API_KEY_CACHE_SECONDS: 30, CDN_PURGE_URL: `${cdn.url}/purge` },
  });
  t.teardown(closeS3Client);

  t.test('only the owner, in a session, may ask; refusals make no token', async (t) => {
    const owner = await signUp(server);
    const member = await signUp(server);
    const outsider = await signUp(server);
    const team = await teamOwnedBy(server, owner);
    await join(server, team, member.userId, ['team.settings.manage']);
    const path = `/v1/teams/${team.teamId}/deletion`;
    expectError(t, await server.media('POST', path, member.token), 403, 'error.forbidden');
    expectError(t, await server.media('POST', path, outsider.token), 401, 'error.unauthorized');
    expectError(t, await server.media('POST', path, team.key), 401, 'error.unauthorized');
    expectError(t, await server.media('POST', '/v1/teams/not-a-team/deletion', owner.token), 404, 'error.notFound');
    t.equal((await sql(server, `select count(*)::int as n from verification_action_token where type = 'TEAM_DELETE'`))[0].n, 0);

    // Asked, then no longer the owner when confirming: 409 and the team stays.
    t.equal((await server.media('POST', path, owner.token)).status, 202);
    const token = await outboxToken(server, owner.email, 'verification.TEAM_DELETE');
    await sql(server, 'update team_member set is_team_owner = (user_id = $1) where team_id = $2 and user_id in ($1, $3)', [member.userId, team.teamId, owner.userId]);
    expectError(t, await confirm(server, token), 409, 'error.conflict');
    t.ok((await rowsOfTeam(server, team.teamId)).team, 'the team stays');
  });

  t.test('confirmed: no row names the team and nothing of it is left in storage; other teams keep everything', async (t) => {
    const owner = await signUp(server);
    const member = await signUp(server);
    const team = await teamOwnedBy(server, owner, 'Doomed');
    await join(server, team, member.userId, ['team.media.view']);
    const survivor = await teamOwnedBy(server, owner, 'Survivor');
    const { tusId } = await fillTeam(t, server, team);
    await fillTeam(t, server, survivor);
    t.equal((await server.media('POST', `/v1/teams/${team.teamId}/automations`, team.key, { body: { name: 'Hook', url: 'https://example.com/hook' } })).status, 201, 'an automation');
    await server.media('POST', `/v1/teams/${team.teamId}/ownership-transfer`, owner.token, { body: { newOwnerId: member.userId } });
    t.equal((await server.media('GET', `/v1/cdn/media/${team.teamId}`, member.token)).status, 200, 'the member\'s session works on the team');
    const survivorRows = await rowsOfTeam(server, survivor.teamId);
    const stored = await storageOfTeam(driver, server.dataDir, team.teamId, tusId);
    const publicMedia = (await sql(server, 'select id from media_file where team_id = $1 and is_public', [team.teamId])).map((row) => row.id);
    t.equal(publicMedia.length, 1, 'one public media file');
    t.ok(stored.length >= 5, `the team has objects (${stored.length})`);

    const started = await server.media('POST', `/v1/teams/${team.teamId}/deletion`, owner.token);
    t.equal(started.status, 202);
    t.match(started.body, [{ type: 'TEAM_DELETE', userId: owner.userId, data: { teamId: team.teamId, teamName: 'Doomed' } }]);
    const token = await outboxToken(server, owner.email, 'verification.TEAM_DELETE');
    t.same(await storageOfTeam(driver, server.dataDir, team.teamId, tusId), stored, 'nothing happens before the confirm');

    // An upload into the team, its body half sent, while the team goes.
    const held = heldUpload(server, team.teamId, team.key, pngLike(256 * 1024));
    await new Promise((resolve) => setTimeout(resolve, 300));

    const done = await confirm(server, token);
    t.match(done.body, { type: 'TEAM_DELETE', completed: true, verificationActionToken: { locked: true } });
    held.finish();
    const heldAnswer = await held.response;
    t.not(heldAnswer.status, 201, `the upload running meanwhile is refused (${heldAnswer.status} ${heldAnswer.body?.messageKey})`);
    t.same(await rowsOfTeam(server, team.teamId), {}, 'no row names the team');
    t.same(await storageOfTeam(driver, server.dataDir, team.teamId, tusId), [], 'nothing of the team is left in storage');
    t.equal((await sql(server, 'select count(*)::int as n from storage_deletion'))[0].n, 0, 'no removal left pending');
    const purges = cdn.requests.filter((request) => request.path === '/purge').flatMap((request) => request.json.urls);
    t.same(purges, [`${server.baseUrl}/media/team/${team.teamId}/${publicMedia[0]}.png`], 'the CDN is told to drop the public link');
    const tags = cdn.requests.filter((request) => request.path === '/purge').flatMap((request) => request.json.tags);
    t.same(tags, [`team-${team.teamId}`], 'and the team\'s cache tag, which covers thumbnails and resized images');
    t.equal((await sql(server, `select count(*)::int as n from verification_action_token where data->>'teamId' = $1 and type = 'TEAM_OWNERSHIP_TRANSFER'`, [team.teamId]))[0].n, 0, 'the pending transfer is gone');
    t.same(await rowsOfTeam(server, survivor.teamId), survivorRows, 'the other team keeps its rows');
    t.equal((await server.media('GET', `/v1/cdn/media/${survivor.teamId}`, survivor.key)).body.media.length, 2, 'and its media');

    expectError(t, await server.media('GET', `/v1/cdn/media/${team.teamId}`, team.key), 401, 'error.unauthorized');
    expectError(t, await server.media('GET', `/v1/cdn/media/${team.teamId}`, member.token), 401, 'error.unauthorized');
    t.equal((await server.media('GET', '/v1/users/me', owner.token)).status, 200, 'the owner\'s account and session stay');
    expectError(t, await confirm(server, token), 410, 'error.verification.tokenUsed');
  });
}
