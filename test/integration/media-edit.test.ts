import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { Test } from 'tap';
import { HttpCdnPurger, NoopCdnPurger } from '../../src/domain/media/cdn-purge.ts';
import { storageKeyOf } from '../../src/uploads/targets/media-upload-target.ts';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer, type CreatedTeam, type TestServer } from '../helpers/server.ts';
import { closeS3Client, DRIVERS_OF_THIS_PASS, driverSettings, settledObjects, storedObjects } from '../helpers/storage.ts';
import { MEDIA_ROW_COLUMNS, teamStorageState, uploadMultipart } from '../helpers/uploads.ts';

t.teardown(closeS3Client);

/** A stand-in CDN purge endpoint: records every posted body. */
const purged: string[][] = [];
const purgedTags: string[][] = [];
const receiver = createServer((request: IncomingMessage, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { urls: string[]; tags: string[] };
    if (request.method === 'POST' && request.headers['content-type'] === 'application/json') {
      purged.push(body.urls);
      purgedTags.push(body.tags);
    }
    response.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
const purgeUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/purge`;

/** Purged urls that name the media id. */
function purgedFor(mediaId: string): string[] {
  return purged.flat().filter((url) => url.includes(mediaId));
}

/** Purged cache tags that name the media id. */
function purgedTagsFor(mediaId: string): string[] {
  return purgedTags.flat().filter((tag) => tag.includes(mediaId));
}

async function memberKey(server: TestServer, teamId: string, name: string, permissions: string[]): Promise<string> {
  const member = await server.admin('POST', `/v1/admin/teams/${teamId}/members`, { name, permissions });
  if (member.status !== 201) throw new Error(`member creation failed: ${JSON.stringify(member.body)}`);
  const key = await server.admin('POST', `/v1/admin/teams/${teamId}/api-keys`, { teamMemberId: member.body.id });
  if (key.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(key.body)}`);
  return key.body.key;
}

/** Rows of a team straight from the database, to prove nothing changed. */
async function teamRows(server: TestServer, teamId: string): Promise<unknown[]> {
  const client = await connectPg(server.databaseUrl);
  try {
    const files = await client.query(`select ${MEDIA_ROW_COLUMNS} from media_file where team_id = $1 order by id`, [teamId]);
    const team = await client.query('select used_storage, reserved_storage from team where id = $1', [teamId]);
    const folders = await client.query('select * from media_folder where team_id = $1 order by id', [teamId]);
    return [files.rows, team.rows, folders.rows];
  } finally {
    await client.end();
  }
}

async function rowExists(server: TestServer, mediaId: string): Promise<boolean> {
  const client = await connectPg(server.databaseUrl);
  try {
    return (await client.query('select 1 from media_file where id = $1', [mediaId])).rowCount === 1;
  } finally {
    await client.end();
  }
}

t.test('HttpCdnPurger logs failures and never throws', async (t) => {
  const warnings: unknown[] = [];
  const logger = { warn: (object: unknown) => void warnings.push(object) };
  const refusing = createServer((_request, response) => response.writeHead(500).end('no'));
  await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => refusing.close(() => resolve())));
  const refusingUrl = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}/`;
  await new HttpCdnPurger({ url: refusingUrl, logger }).purge({ urls: ['http://x/a'], tags: [] });
  t.match(warnings[0], { status: 500, urls: ['http://x/a'] }, 'a refusal is logged');
  // Nothing listens here once the server is closed.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const closedUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/`;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  await new HttpCdnPurger({ url: closedUrl, logger }).purge({ urls: ['http://x/b'], tags: ['media-b'] });
  t.match(warnings[1], { urls: ['http://x/b'] }, 'a network error is logged');
  const hanging = createServer(() => undefined);
  await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    hanging.closeAllConnections();
    return new Promise<void>((resolve) => hanging.close(() => resolve()));
  });
  await new HttpCdnPurger({ url: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/`, logger, timeoutMs: 100 }).purge({ urls: ['http://x/c'], tags: [] });
  t.match(warnings[2], { urls: ['http://x/c'] }, 'a timeout is logged');
  const before = warnings.length;
  await new HttpCdnPurger({ url: closedUrl, logger }).purge({ urls: [], tags: [] });
  t.equal(warnings.length, before, 'nothing to purge: no request');
  await t.resolves(new NoopCdnPurger().purge({ urls: ['http://x/d'], tags: [] }));
});

for (const driver of DRIVERS_OF_THIS_PASS) {
  t.test(`${driver} driver`, async (t) => {
    const server = await startTestServer(t, {
      settings: { ...driverSettings(driver), RATE_LIMIT_POINTS: 100_000, CDN_PURGE_URL: purgeUrl },
    });
    const teamA = await server.createTeam('EditTeamA');
    const teamB = await server.createTeam('EditTeamB');
    const base = (team: CreatedTeam = teamA) => `/v1/cdn/media/${team.teamId}`;
    let counter = 0;

    async function upload(team: CreatedTeam = teamA, query = ''): Promise<any> {
      counter++;
      const response = await uploadMultipart(
        server,
        team.teamId,
        team.key,
        { content: Buffer.from(`file number ${counter} `.repeat(counter)), fileName: `file-${counter}.txt`, contentType: 'text/plain' },
        query,
      );
      if (response.status !== 201) throw new Error(`upload failed: ${response.status} ${JSON.stringify(response.body)}`);
      return response.body;
    }
    async function folder(team: CreatedTeam = teamA, name = `folder-${randomUUID().slice(0, 8)}`): Promise<string> {
      const response = await server.media('POST', `${base(team)}/folders`, team.key, { body: { name } });
      if (response.status !== 201) throw new Error(`folder failed: ${JSON.stringify(response.body)}`);
      return response.body.id;
    }
    const patch = (id: string, body: unknown, key = teamA.key, team = teamA) => server.media('PATCH', `${base(team)}/update/${id}`, key, { body });
    const del = (id: string, key = teamA.key, team = teamA) => server.media('DELETE', `${base(team)}/delete/${id}`, key);
    const bulk = (body: unknown, key = teamA.key, team = teamA) => server.media('POST', `${base(team)}/bulk`, key, { body });
    async function storageConsistent(t: Test, team: CreatedTeam = teamA): Promise<void> {
      const state = await teamStorageState(server.databaseUrl, team.teamId);
      t.equal(state.usedStorage, state.sumOfSizes, 'used storage equals the sum of the sizes');
    }

    // Team B's data, checked unchanged at the end.
    const bFolder = await folder(teamB);
    const bFiles = [await upload(teamB), await upload(teamB)];
    const bBefore = await teamRows(server, teamB.teamId);

    t.test('PATCH updates each field and answers the record', async (t) => {
      const file = await upload();
      t.equal(file.publicUrl !== null, true, 'multipart uploads are public by default');

      const renamed = await patch(file.id, { fileName: 'dir/renamed.txt' });
      t.equal(renamed.status, 200);
      t.match(renamed.body, { id: file.id, fileName: 'renamed.txt', public: true, folderId: null, tags: [], size: file.size ?? Number });

      const tagged = await patch(file.id, { tags: [' key:value', 'second', 'key:value'] });
      t.same(tagged.body.tags, ['key:value', 'second'], 'tags trimmed and duplicates collapsed as on upload');
      const replaced = await patch(file.id, { tags: ['only'] });
      t.same(replaced.body.tags, ['only'], 'tags replace all');

      const target = await folder();
      const moved = await patch(file.id, { folderId: target });
      t.equal(moved.body.folderId, target);
      const unfoldered = await patch(file.id, { folderId: null });
      t.equal(unfoldered.status, 200);
      t.equal(unfoldered.body.folderId, null, 'folderId null removes the folder');

      const before = purgedFor(file.id).length;
      const hidden = await patch(file.id, { public: false });
      t.equal(hidden.body.public, false);
      t.equal(hidden.body.publicUrl, null, 'a private file has no public link');
      t.ok(purgedFor(file.id).length > before, 'making a file private purges its CDN link');
      t.ok(purgedTagsFor(file.id).includes(`media-${file.id}`), 'and its cache tag');
      const shown = await patch(file.id, { public: true });
      t.match(shown.body.publicUrl, new RegExp(`/media/team/${teamA.teamId}/${file.id}\\.txt$`));

      const all = await patch(file.id, { fileName: 'all.txt', public: false, tags: ['a', 'b'], folderId: target });
      t.match(all.body, { fileName: 'all.txt', public: false, tags: ['a', 'b'], folderId: target });

      const unchanged = await patch(file.id, {});
      t.equal(unchanged.status, 200, '{} answers the record unchanged');
      t.same(unchanged.body, all.body);
    });

    t.test('PATCH validation: 400 for bad values, 404 for unknown files and folders', async (t) => {
      const file = await upload();
      for (const body of [
        { unknown: 1 },
        { fileName: '' },
        { fileName: 12 },
        { fileName: null },
        { fileName: 'x'.repeat(256) },
        { fileName: 'bad\u0000name' },
        { public: 'yes' },
        { public: null },
        { tags: 'a,b' },
        { tags: ['Not Valid!'] },
        { tags: ['Key:Value'] },
        { tags: ['ok', 'UPPER'] },
        { tags: ['x'.repeat(65)] },
        { tags: Array.from({ length: 21 }, (_, index) => `t${index}`) },
        { tags: null },
        { folderId: 'not-a-uuid' },
        [],
        'text',
      ]) {
        expectError(t, await patch(file.id, body), 400, 'error.badRequest');
      }
      expectError(t, await patch(file.id, { folderId: randomUUID() }), 404, 'error.notFound');
      expectError(t, await patch(file.id, { folderId: bFolder }), 404, 'error.notFound');
      expectError(t, await patch(randomUUID(), { public: false }), 404, 'error.notFound');
      expectError(t, await patch('not-an-id', { public: false }), 404, 'error.notFound');
      const after = await server.media('GET', `${base()}`, teamA.key);
      const record = after.body.media.find((media: any) => media.id === file.id);
      t.match(record, { fileName: file.fileName ?? String, public: true, folderId: null, tags: [] }, 'refused updates changed nothing');
    });

    t.test('PATCH refuses a rename to a blocked file type with 415 and changes nothing (issue 17.1)', async (t) => {
      const file = await upload(teamA, 'tags=keep');
      const before = await teamRows(server, teamA.teamId);
      for (const fileName of ['invoice.hta', 'x.html', 'x.svg', 'x.exe', 'x.js', 'x.sh', 'dir/x.HTML.', 'x.url', 'x.library-ms', 'x.xlsm']) {
        const refused = await patch(file.id, { fileName, tags: ['other'], public: false });
        expectError(t, refused, 415, 'error.unsupportedMediaType');
        t.type(refused.body.value, 'string', `${fileName}: the reason is named`);
      }
      t.same(await teamRows(server, teamA.teamId), before, 'no row changed');
      const listed = (await server.media('GET', `${base()}`, teamA.key)).body.media.find((media: any) => media.id === file.id);
      t.match(listed, { fileName: file.fileName, public: true, tags: ['keep'] }, 'the record is as before');
      t.equal((await patch(file.id, { fileName: 'invoice.pdf' })).status, 200, 'a rename to an allowed type passes');
    });

    t.test('DELETE removes the row, the object and the counted storage, and purges the link', async (t) => {
      const keep = await upload();
      const file = await upload();
      const objectsBefore = (await storedObjects(driver, server.dataDir, teamA.teamId)).objects.length;
      const deleted = await del(file.id);
      t.equal(deleted.status, 200);
      const state = await teamStorageState(server.databaseUrl, teamA.teamId);
      t.same(deleted.body, { deleted: file.id, usedTeamStorage: state.usedStorage });
      t.equal(state.usedStorage, state.sumOfSizes, 'used storage equals the sum of the sizes');
      t.notOk(await rowExists(server, file.id), 'row gone');
      t.ok(await rowExists(server, keep.id), 'other files stay');
      const objects = await settledObjects(driver, server.dataDir, teamA.teamId, objectsBefore - 1);
      t.equal(objects.objects.length, objectsBefore - 1, 'object removed from storage');
      t.notOk(objects.objects.some((key) => key.includes(file.id)), 'the deleted file has no object');
      t.ok(objects.objects.some((key) => key.includes(keep.id)), 'the kept file still has its object');
      t.match(file.publicUrl, new RegExp(`/media/team/${teamA.teamId}/${file.id}\\.txt$`));
      t.same(purgedFor(file.id), [file.publicUrl], 'the purge hook got the public link');
      t.same(purgedTagsFor(file.id), [`media-${file.id}`], 'and the cache tag that covers its resized images');

      expectError(t, await del(file.id), 404, 'error.notFound');
      expectError(t, await del(randomUUID()), 404, 'error.notFound');
      expectError(t, await del('nope'), 404, 'error.notFound');
      await storageConsistent(t);
    });

    t.test('a failed storage removal is logged and leaves the object for the sweeper; the delete stands', async (t) => {
      const file = await upload();
      const store = server.app.services.store;
      const original = store.remove.bind(store);
      store.remove = async () => {
        throw new Error('storage down');
      };
      t.teardown(() => {
        store.remove = original;
      });
      const objectsBefore = (await storedObjects(driver, server.dataDir, teamA.teamId)).objects.length;
      const deleted = await del(file.id);
      t.equal(deleted.status, 200);
      t.equal(deleted.body.deleted, file.id);
      t.notOk(await rowExists(server, file.id), 'row gone');
      await storageConsistent(t);
      t.equal((await storedObjects(driver, server.dataDir, teamA.teamId)).objects.length, objectsBefore, 'the orphaned object stays');
      t.same(purgedFor(file.id), [file.publicUrl], 'the link is purged all the same');
      store.remove = original;
      await original(storageKeyOf(teamA.teamId, file.id));
    });

    t.test('bulk: each action', async (t) => {
      const files = [await upload(), await upload(), await upload()];
      const ids = files.map((file) => file.id);
      const target = await folder();

      const moved = await bulk({ action: 'move', ids, folderId: target });
      t.same(moved.body, { affected: 3, failed: [] });
      const listed = await server.media('GET', `${base()}?folderId=${target}`, teamA.key);
      t.same(listed.body.media.map((media: any) => media.id).sort(), [...ids].sort());
      t.same((await bulk({ action: 'move', ids, folderId: null })).body, { affected: 3, failed: [] });
      expectError(t, await bulk({ action: 'move', ids, folderId: bFolder }), 404, 'error.notFound');

      const hidden = await bulk({ action: 'setPublic', ids, public: false });
      t.same(hidden.body, { affected: 3, failed: [] });
      for (const id of ids) t.equal(purgedFor(id).length > 0, true, 'links of files made private are purged');
      const privateList = await server.media('GET', `${base()}?folderId=none`, teamA.key);
      for (const id of ids) t.match(privateList.body.media.find((media: any) => media.id === id), { public: false, publicUrl: null });
      t.same((await bulk({ action: 'setPublic', ids, public: true })).body, { affected: 3, failed: [] });

      t.same((await bulk({ action: 'addTags', ids, tags: ['one', 'two'] })).body, { affected: 3, failed: [] });
      t.same((await bulk({ action: 'addTags', ids: [ids[0]], tags: ['three', 'one'] })).body, { affected: 1, failed: [] });
      t.same((await bulk({ action: 'removeTags', ids, tags: ['one'] })).body, { affected: 3, failed: [] });
      const tagged = await server.media('GET', `${base()}?tags=two`, teamA.key);
      const tagsOf = (id: string) => tagged.body.media.find((media: any) => media.id === id)?.tags;
      t.same(tagsOf(ids[0]), ['two', 'three'], 'order kept, duplicates collapse');
      t.same(tagsOf(ids[1]), ['two']);

      const before = await teamStorageState(server.databaseUrl, teamA.teamId);
      const objectsBefore = (await storedObjects(driver, server.dataDir, teamA.teamId)).objects.length;
      const deleted = await bulk({ action: 'delete', ids: [ids[0], ids[1]] });
      t.same(deleted.body, { affected: 2, failed: [] });
      const after = await teamStorageState(server.databaseUrl, teamA.teamId);
      t.equal(after.files, before.files - 2);
      t.equal(after.usedStorage, after.sumOfSizes, 'used storage equals the sum of the sizes');
      const objects = await settledObjects(driver, server.dataDir, teamA.teamId, objectsBefore - 2);
      t.equal(objects.objects.length, objectsBefore - 2, 'objects removed');
      t.ok(purgedFor(ids[0]!).some((url) => url.endsWith(`${ids[0]}.txt`)), 'bulk delete purges');
    });

    t.test('bulk: ids of another team, unknown ids and tag overflow go to failed; the rest is processed', async (t) => {
      const full = await upload(teamA, `tags=${Array.from({ length: 19 }, (_, index) => `t${index}`).join(',')}`);
      const plain = await upload();
      const unknown = randomUUID();
      const added = await bulk({ action: 'addTags', ids: [full.id, plain.id, unknown, bFiles[0].id], tags: ['new1', 'new2'] });
      t.equal(added.status, 200);
      t.equal(added.body.affected, 1);
      t.same(
        [...added.body.failed].sort((a: any, b: any) => a.id.localeCompare(b.id)),
        [
          { id: full.id, message: 'A file has at most 20 tags' },
          { id: unknown, message: 'Could not find media file' },
          { id: bFiles[0].id, message: 'Could not find media file' },
        ].sort((a, b) => a.id.localeCompare(b.id)),
      );
      const exact = await bulk({ action: 'addTags', ids: [full.id], tags: ['t0', 'new1'] });
      t.same(exact.body, { affected: 1, failed: [] }, 'exactly 20 tags is fine');

      const objectsBefore = (await storedObjects(driver, server.dataDir, teamA.teamId)).objects.length;
      const deleted = await bulk({ action: 'delete', ids: [plain.id, unknown, bFiles[1].id] });
      t.equal(deleted.body.affected, 1);
      t.same(deleted.body.failed.map((failure: any) => failure.id).sort(), [unknown, bFiles[1].id].sort());
      t.notOk(await rowExists(server, plain.id));
      t.equal((await settledObjects(driver, server.dataDir, teamA.teamId, objectsBefore - 1)).objects.length, objectsBefore - 1);
      t.ok(await rowExists(server, bFiles[1].id), "another team's file is never deleted");
      await storageConsistent(t);
    });

    t.test('bulk validation: 400', async (t) => {
      const file = await upload();
      const tooMany = Array.from({ length: 101 }, () => randomUUID());
      expectError(t, await bulk({ action: 'delete', ids: tooMany }), 400, 'error.badRequest');
      expectError(t, await bulk({ action: 'addTags', ids: tooMany, tags: ['a'] }), 400, 'error.badRequest');
      t.equal((await bulk({ action: 'delete', ids: tooMany.slice(0, 100) })).body.failed.length, 100, '100 ids are allowed');
      for (const body of [
        { action: 'explode', ids: [file.id] },
        { ids: [file.id] },
        { action: 'delete', ids: [] },
        { action: 'delete', ids: ['not-a-uuid'] },
        { action: 'delete', ids: file.id },
        { action: 'delete', ids: [file.id], extra: true },
        { action: 'move', ids: [file.id], folderId: 'x' },
        { action: 'setPublic', ids: [file.id], public: 'no' },
        { action: 'addTags', ids: [file.id], tags: ['BAD TAG'] },
        { action: 'addTags', ids: [file.id], tags: ['Upper'] },
        { action: 'removeTags', ids: [file.id], tags: ['one', 'Two'] },
        { action: 'addTags', ids: [file.id], tags: [] },
        { action: 'addTags', ids: [file.id], tags: 'a,b' },
        [],
      ]) {
        expectError(t, await bulk(body), 400, 'error.badRequest');
      }
      // A missing extra field is MissingArgumentError (400), as in the rest of the API.
      expectError(t, await bulk({ action: 'move', ids: [file.id] }), 400, 'error.missingArgument.folderId');
      expectError(t, await bulk({ action: 'setPublic', ids: [file.id] }), 400, 'error.missingArgument.public');
      expectError(t, await bulk({ action: 'removeTags', ids: [file.id] }), 400, 'error.missingArgument.tags');
      expectError(t, await bulk({ action: 'delete' }), 400, 'error.missingArgument.ids');
      t.ok(await rowExists(server, file.id));
    });

    t.test('permissions: each route and bulk action needs its own', async (t) => {
      const file = await upload();
      const viewKey = await memberKey(server, teamA.teamId, 'viewer_only', ['team.media.view']);
      const editKey = await memberKey(server, teamA.teamId, 'editor_only', ['team.media.edit']);
      const deleteKey = await memberKey(server, teamA.teamId, 'deleter_only', ['team.media.delete']);
      const editActions = [
        { action: 'move', ids: [file.id], folderId: null },
        { action: 'setPublic', ids: [file.id], public: true },
        { action: 'addTags', ids: [file.id], tags: ['p'] },
        { action: 'removeTags', ids: [file.id], tags: ['p'] },
      ];
      const deleteAction = { action: 'delete', ids: [file.id] };

      expectError(t, await patch(file.id, { public: true }, viewKey), 403, 'error.forbidden');
      expectError(t, await patch(file.id, { public: true }, deleteKey), 403, 'error.forbidden');
      expectError(t, await del(file.id, viewKey), 403, 'error.forbidden');
      expectError(t, await del(file.id, editKey), 403, 'error.forbidden');
      for (const action of [...editActions, deleteAction]) expectError(t, await bulk(action, viewKey), 403, 'error.forbidden');
      for (const action of editActions) expectError(t, await bulk(action, deleteKey), 403, 'error.forbidden');
      expectError(t, await bulk(deleteAction, editKey), 403, 'error.forbidden');
      t.ok(await rowExists(server, file.id), 'nothing deleted by refused calls');

      t.equal((await patch(file.id, { public: true }, editKey)).status, 200);
      for (const action of editActions) t.same((await bulk(action, editKey)).body, { affected: 1, failed: [] }, `${action.action} with edit`);
      t.same((await bulk(deleteAction, deleteKey)).body, { affected: 1, failed: [] }, 'delete with delete');
      const other = await upload();
      t.equal((await del(other.id, deleteKey)).status, 200);
      await storageConsistent(t);
    });

    t.test('tenant isolation', async (t) => {
      const file = await upload();
      // Team B's key on team A's routes: 401.
      expectError(t, await patch(file.id, { public: false }, teamB.key), 401, 'error.unauthorized');
      expectError(t, await del(file.id, teamB.key), 401, 'error.unauthorized');
      expectError(t, await bulk({ action: 'delete', ids: [file.id] }, teamB.key), 401, 'error.unauthorized');
      // Team A's key on team B's routes: 401.
      expectError(t, await patch(bFiles[0].id, { public: false }, teamA.key, teamB), 401, 'error.unauthorized');
      expectError(t, await del(bFiles[0].id, teamA.key, teamB), 401, 'error.unauthorized');
      expectError(t, await bulk({ action: 'delete', ids: [bFiles[0].id] }, teamA.key, teamB), 401, 'error.unauthorized');
      // Team A's key with team B's ids on team A's routes: 404 / failed.
      const foreignPatch = await patch(bFiles[0].id, { fileName: 'stolen.txt', public: false, tags: ['x'] });
      expectError(t, foreignPatch, 404, 'error.notFound');
      t.notMatch(JSON.stringify(foreignPatch.body), teamB.teamId);
      expectError(t, await del(bFiles[0].id), 404, 'error.notFound');
      for (const body of [
        { action: 'delete', ids: [bFiles[0].id] },
        { action: 'move', ids: [bFiles[0].id], folderId: null },
        { action: 'setPublic', ids: [bFiles[0].id], public: false },
        { action: 'addTags', ids: [bFiles[0].id], tags: ['x'] },
        { action: 'removeTags', ids: [bFiles[0].id], tags: ['x'] },
      ]) {
        t.same((await bulk(body)).body, { affected: 0, failed: [{ id: bFiles[0].id, message: 'Could not find media file' }] }, body.action);
      }
      t.same(await teamRows(server, teamB.teamId), bBefore, "team B's rows never changed");
      t.equal((await storedObjects(driver, server.dataDir, teamB.teamId)).objects.length, 2, "team B's objects are all there");
      for (const id of bFiles.map((f) => f.id)) t.same(purgedFor(id), [], "team B's links were never purged");
      await storageConsistent(t, teamB);
      await storageConsistent(t);
    });
  });
}
