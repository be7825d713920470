import { randomUUID } from 'node:crypto';
import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { subscribeToUploads } from '../helpers/outbox.ts';
import { expectError, startTestServer, type ApiResponse } from '../helpers/server.ts';
import { heldUpload, pngLike, teamStorageState, uploadMultipart } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('FolderTeam');
const other = await server.createTeam('OtherFolderTeam');
const base = (teamId = team.teamId) => `/v1/cdn/media/${teamId}/folders`;

async function create(body: unknown, key = team.key, teamId = team.teamId): Promise<ApiResponse> {
  return server.media('POST', base(teamId), key, { body });
}

async function createOk(body: Record<string, unknown>, teamId = team.teamId, key = team.key): Promise<any> {
  const response = await create(body, key, teamId);
  if (response.status !== 201) throw new Error(`folder creation failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

async function patch(id: string, body: unknown, key = team.key, teamId = team.teamId): Promise<ApiResponse> {
  return server.media('PATCH', `${base(teamId)}/${id}`, key, { body });
}

async function list(teamId = team.teamId, key = team.key): Promise<any[]> {
  const response = await server.media('GET', base(teamId), key);
  if (response.status !== 200) throw new Error(`list failed: ${response.status}`);
  return response.body.folders;
}

async function folderById(id: string): Promise<any> {
  return (await list()).find((folder) => folder.id === id);
}

/** A chain of nested folders with the given names, top first. */
async function chain(names: string[]): Promise<any[]> {
  const created: any[] = [];
  for (const name of names) created.push(await createOk({ name, parentId: created.at(-1)?.id ?? null }));
  return created;
}

async function upload(folderId: string, fileName: string): Promise<string> {
  const response = await uploadMultipart(server, team.teamId, team.key, { content: Buffer.from(`content of ${fileName}`), fileName, contentType: 'text/plain' }, `folderId=${folderId}`);
  if (response.status !== 201) throw new Error(`upload failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.id;
}

async function fileFolder(fileId: string): Promise<string | null> {
  const client = await connectPg(server.databaseUrl);
  try {
    const { rows } = await client.query<{ folder_id: string | null }>('select folder_id from media_file where id = $1', [fileId]);
    return rows[0]!.folder_id;
  } finally {
    await client.end();
  }
}

t.test('create answers 201 with the folder record; list is flat, parents first', async (t) => {
  const top = await create({ name: '  Screenshots  ', retentionDays: 30, maxFiles: 100, defaultPublic: false });
  t.equal(top.status, 201);
  t.match(top.body, {
    id: String,
    name: 'Screenshots',
    parentId: null,
    depth: 1,
    retentionDays: 30,
    maxFiles: 100,
    defaultPublic: false,
    fileCount: 0,
    createdAt: String,
    updatedAt: String,
  });
  const child = await createOk({ name: 'b-child', parentId: top.body.id });
  t.match(child, { parentId: top.body.id, depth: 2, retentionDays: null, maxFiles: null, defaultPublic: null });
  const sibling = await createOk({ name: 'a-child', parentId: top.body.id });
  const folders = await list();
  const ids = folders.map((folder) => folder.id);
  t.ok(ids.indexOf(top.body.id) < ids.indexOf(sibling.id), 'parent before child');
  t.ok(ids.indexOf(sibling.id) < ids.indexOf(child.id), 'siblings by name');
  for (let index = 1; index < folders.length; index++) t.ok(folders[index - 1].depth <= folders[index].depth, 'ordered by depth');
});

t.test('sibling names are unique (409); the same name under two parents is fine', async (t) => {
  const first = await createOk({ name: 'dup-root' });
  expectError(t, await create({ name: 'dup-root' }), 409, 'error.conflict');
  const second = await createOk({ name: 'dup-root-2' });
  t.equal((await create({ name: '2024', parentId: first.id })).status, 201);
  t.equal((await create({ name: '2024', parentId: second.id })).status, 201, 'same name, other parent');
  expectError(t, await create({ name: '2024', parentId: second.id }), 409, 'error.conflict');
  const renamed = await createOk({ name: '2025', parentId: second.id });
  expectError(t, await patch(renamed.id, { name: '2024' }), 409, 'error.conflict');
  t.equal((await folderById(renamed.id)).name, '2025', 'a refused rename changes nothing');
});

t.test('rename and change rules', async (t) => {
  const folder = await createOk({ name: 'rules', retentionDays: 7 });
  const renamed = await patch(folder.id, { name: 'renamed', maxFiles: 5, defaultPublic: true });
  t.equal(renamed.status, 200);
  t.match(renamed.body, { id: folder.id, name: 'renamed', retentionDays: 7, maxFiles: 5, defaultPublic: true, parentId: null, depth: 1 });
  const cleared = await patch(folder.id, { retentionDays: null, defaultPublic: null });
  t.match(cleared.body, { name: 'renamed', retentionDays: null, maxFiles: 5, defaultPublic: null });
  t.same(await folderById(folder.id), cleared.body, 'the list shows the same record');
});

t.test('nesting deeper than 5 levels is 400, on create and on move', async (t) => {
  const levels = await chain(['d1', 'd2', 'd3', 'd4', 'd5']);
  t.equal(levels[4].depth, 5);
  expectError(t, await create({ name: 'd6', parentId: levels[4].id }), 400, 'error.badRequest');

  // A subtree two levels deep fits under level 3 but not under level 4.
  const moving = await chain(['m1', 'm2']);
  expectError(t, await patch(moving[0].id, { parentId: levels[3].id }), 400, 'error.badRequest');
  t.match(await folderById(moving[0].id), { parentId: null, depth: 1 }, 'a refused move changes nothing');
  t.match(await folderById(moving[1].id), { parentId: moving[0].id, depth: 2 });

  const moved = await patch(moving[0].id, { parentId: levels[2].id });
  t.equal(moved.status, 200);
  t.match(moved.body, { parentId: levels[2].id, depth: 4 });
  t.match(await folderById(moving[1].id), { parentId: moving[0].id, depth: 5 }, 'the subtree depth follows');

  const back = await patch(moving[0].id, { parentId: null });
  t.match(back.body, { parentId: null, depth: 1 });
  t.match(await folderById(moving[1].id), { depth: 2 });
});

t.test('a folder cannot move into itself or its descendants', async (t) => {
  const [a, b, c] = await chain(['cyc-a', 'cyc-b', 'cyc-c']);
  expectError(t, await patch(a.id, { parentId: a.id }), 400, 'error.badRequest');
  expectError(t, await patch(a.id, { parentId: c.id }), 400, 'error.badRequest');
  expectError(t, await patch(b.id, { parentId: c.id }), 400, 'error.badRequest');
  t.match(await folderById(a.id), { parentId: null, depth: 1 });
  t.match(await folderById(c.id), { parentId: b.id, depth: 3 });
});

t.test('a move with a name taken at the destination is 409; move and rename together work', async (t) => {
  const [p1, p2] = [await createOk({ name: 'mv-p1' }), await createOk({ name: 'mv-p2' })];
  const x1 = await createOk({ name: 'x', parentId: p1.id });
  await createOk({ name: 'x', parentId: p2.id });
  expectError(t, await patch(x1.id, { parentId: p2.id }), 409, 'error.conflict');
  t.match(await folderById(x1.id), { parentId: p1.id, name: 'x' });
  const both = await patch(x1.id, { parentId: p2.id, name: 'y' });
  t.equal(both.status, 200);
  t.match(both.body, { parentId: p2.id, name: 'y', depth: 2 });
});

t.test('delete moves files and subfolders to the parent', async (t) => {
  const [top, middle, child, grandchild] = await chain(['del-top', 'del-middle', 'del-child', 'del-grandchild']);
  const sibling = await createOk({ name: 'del-sibling', parentId: middle.id });
  const inMiddle = [await upload(middle.id, 'one.txt'), await upload(middle.id, 'two.txt')];
  const inChild = await upload(child.id, 'three.txt');
  t.equal((await folderById(middle.id)).fileCount, 2, 'fileCount counts the files directly in the folder');

  const deleted = await server.media('DELETE', `${base()}/${middle.id}`, team.key);
  t.equal(deleted.status, 200);
  t.same(deleted.body, { deleted: middle.id, movedFiles: 2, movedFolders: 2 });
  t.notOk(await folderById(middle.id), 'the folder is gone');
  for (const id of inMiddle) t.equal(await fileFolder(id), top.id, 'file moved to the parent');
  t.equal(await fileFolder(inChild), child.id, 'files of subfolders stay where they are');
  t.match(await folderById(child.id), { parentId: top.id, depth: 2 });
  t.match(await folderById(sibling.id), { parentId: top.id, depth: 2 });
  t.match(await folderById(grandchild.id), { parentId: child.id, depth: 3 }, 'the whole subtree moves up a level');
  t.equal((await folderById(top.id)).fileCount, 2);

  // Deleting a top-level folder leaves its files in no folder and its subfolders at the top.
  const deletedTop = await server.media('DELETE', `${base()}/${top.id}`, team.key);
  t.same(deletedTop.body, { deleted: top.id, movedFiles: 2, movedFolders: 2 });
  for (const id of inMiddle) t.equal(await fileFolder(id), null);
  t.match(await folderById(child.id), { parentId: null, depth: 1 });
  t.match(await folderById(grandchild.id), { depth: 2 });
});

t.test('delete with a subfolder named like the folder itself works', async (t) => {
  const [outer, inner] = await chain(['same-name', 'same-name']);
  const response = await server.media('DELETE', `${base()}/${outer.id}`, team.key);
  t.same(response.body, { deleted: outer.id, movedFiles: 0, movedFolders: 1 });
  t.match(await folderById(inner.id), { name: 'same-name', parentId: null, depth: 1 });
});

t.test('delete whose subfolder clashes with a sibling at the parent is 409 and changes nothing', async (t) => {
  const parent = await createOk({ name: 'clash-parent' });
  await createOk({ name: 'assets', parentId: parent.id });
  const doomed = await createOk({ name: 'doomed', parentId: parent.id });
  const clashing = await createOk({ name: 'assets', parentId: doomed.id });
  const file = await upload(doomed.id, 'kept.txt');
  expectError(t, await server.media('DELETE', `${base()}/${doomed.id}`, team.key), 409, 'error.conflict');
  t.match(await folderById(doomed.id), { name: 'doomed', parentId: parent.id, fileCount: 1 });
  t.match(await folderById(clashing.id), { parentId: doomed.id, depth: 3 });
  t.equal(await fileFolder(file), doomed.id);
});

t.test('invalid bodies are 400', async (t) => {
  const folder = await createOk({ name: 'valid' });
  const invalid: unknown[] = [
    {},
    { name: '' },
    { name: '   ' },
    { name: 'x'.repeat(101) },
    { name: 'a/b' },
    { name: '.' },
    { name: '..' },
    { name: 'bad\u0007name' },
    { name: 42 },
    { name: 'ok', parentId: 'not-a-uuid' },
    { name: 'ok', retentionDays: 0 },
    { name: 'ok', retentionDays: 1.5 },
    { name: 'ok', maxFiles: -1 },
    { name: 'ok', maxFiles: '5' },
    { name: 'ok', defaultPublic: 'yes' },
    { name: 'ok', unknown: true },
    [],
    'text',
  ];
  for (const body of invalid) {
    const response = await create(body);
    t.equal(response.status, 400, `create ${JSON.stringify(body)}`);
  }
  t.equal((await server.request('POST', base(), { body: '{not json', headers: { authorization: `Bearer ${team.key}` } })).status, 400, 'not JSON');
  for (const body of [{}, { name: '' }, { retentionDays: 0 }, { parentId: 'x' }, { depth: 3 }]) {
    t.equal((await patch(folder.id, body)).status, 400, `patch ${JSON.stringify(body)}`);
  }
  t.equal((await create({ name: 'x'.repeat(100) })).status, 201, '100 characters are allowed');
  t.match(await folderById(folder.id), { name: 'valid' });
});

t.test('unknown ids are 404', async (t) => {
  const folder = await createOk({ name: 'known' });
  const unknown = randomUUID();
  expectError(t, await create({ name: 'orphan', parentId: unknown }), 404, 'error.notFound');
  expectError(t, await patch(unknown, { name: 'x' }), 404, 'error.notFound');
  expectError(t, await patch('not-a-uuid', { name: 'x' }), 404, 'error.notFound');
  expectError(t, await patch(folder.id, { parentId: unknown }), 404, 'error.notFound');
  expectError(t, await server.media('DELETE', `${base()}/${unknown}`, team.key), 404, 'error.notFound');
});

t.test('another team: its key is 401 on our routes, our key never reaches its folders', async (t) => {
  const ours = await createOk({ name: 'ours' });
  const theirs = await createOk({ name: 'theirs', retentionDays: 3 }, other.teamId, other.key);

  for (const response of [
    await server.media('GET', base(), other.key),
    await create({ name: 'intruder' }, other.key),
    await patch(ours.id, { name: 'hijacked' }, other.key),
    await server.media('DELETE', `${base()}/${ours.id}`, other.key),
  ]) {
    expectError(t, response, 401, 'error.unauthorized');
    t.notMatch(JSON.stringify(response.body), 'ours');
  }

  expectError(t, await patch(theirs.id, { name: 'hijacked' }), 404, 'error.notFound');
  expectError(t, await patch(ours.id, { parentId: theirs.id }), 404, 'error.notFound');
  expectError(t, await create({ name: 'inside', parentId: theirs.id }), 404, 'error.notFound');
  expectError(t, await server.media('DELETE', `${base()}/${theirs.id}`, team.key), 404, 'error.notFound');
  t.notOk((await list()).some((folder) => folder.id === theirs.id), 'never listed');

  const theirList = await list(other.teamId, other.key);
  t.same(theirList.map((folder) => [folder.id, folder.name, folder.retentionDays]), [[theirs.id, 'theirs', 3]], 'their folder unchanged, nothing added');
  t.match(await folderById(ours.id), { name: 'ours', parentId: null });
});

t.test('permissions: view may list, edit is needed to change', async (t) => {
  const member = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'folder_viewer', permissions: ['team.media.view'] });
  const created = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { teamMemberId: member.body.id });
  const viewerKey: string = created.body.key;
  const folder = await createOk({ name: 'guarded' });

  t.equal((await server.media('GET', base(), viewerKey)).status, 200);
  expectError(t, await create({ name: 'nope' }, viewerKey), 403, 'error.forbidden');
  expectError(t, await patch(folder.id, { name: 'nope' }, viewerKey), 403, 'error.forbidden');
  expectError(t, await server.media('DELETE', `${base()}/${folder.id}`, viewerKey), 403, 'error.forbidden');
  t.match(await folderById(folder.id), { name: 'guarded' });

  const uploader = await server.admin('POST', `/v1/admin/teams/${team.teamId}/members`, { name: 'folder_upload', permissions: ['team.media.upload'] });
  const uploaderKey = await server.admin('POST', `/v1/admin/teams/${team.teamId}/api-keys`, { teamMemberId: uploader.body.id });
  expectError(t, await server.media('GET', base(), uploaderKey.body.key), 403, 'error.forbidden');
});

t.test('concurrent creates of one name: exactly one 201, the rest 409', async (t) => {
  const responses = await Promise.all(Array.from({ length: 6 }, () => create({ name: 'race' })));
  t.same(responses.map((response) => response.status).sort(), [201, 409, 409, 409, 409, 409]);
  t.equal((await list()).filter((folder) => folder.name === 'race' && folder.parentId === null).length, 1);
});

t.test('the upload folder path option finds the folders the routes made, 2024 under two parents', async (t) => {
  const games = await createOk({ name: 'games' });
  const year = await createOk({ name: '2024', parentId: games.id });
  const viaPath = await uploadMultipart(server, team.teamId, team.key, { content: Buffer.from('x'), fileName: 'p.txt', contentType: 'text/plain' }, 'folder=games/2024');
  t.equal(viaPath.status, 201);
  t.equal(viaPath.body.folderId, year.id, 'the existing folder is used');
  const other2024 = await uploadMultipart(server, team.teamId, team.key, { content: Buffer.from('y'), fileName: 'q.txt', contentType: 'text/plain' }, 'folder=clips/2024');
  t.equal(other2024.status, 201);
  const created = await folderById(other2024.body.folderId);
  t.match(created, { name: '2024', depth: 2, fileCount: 1 });
  t.not(created.id, year.id);
});

t.test('a folder deleted while an upload into it streams: 404 at commit, nothing stored or counted', async (t) => {
  const owner = await server.createTeam('FolderGoneTeam');
  await subscribeToUploads(server.databaseUrl, owner.teamId); // so that "no event" below could fail
  const folder = await createOk({ name: 'going-away' }, owner.teamId, owner.key);
  const held = heldUpload(server, owner.teamId, owner.key, pngLike(6 * 1024 * 1024), `folderId=${folder.id}`);
  t.ok(await eventually(async () => (await teamStorageState(server.databaseUrl, owner.teamId)).reservations === 1), 'the upload is streaming');
  const deleted = await server.media('DELETE', `${base(owner.teamId)}/${folder.id}`, owner.key);
  t.equal(deleted.status, 200);
  held.finish();
  const response = await held.response;
  expectError(t, response as ApiResponse, 404, 'error.notFound');
  t.same(await teamStorageState(server.databaseUrl, owner.teamId), { files: 0, sumOfSizes: 0, usedStorage: 0, reservedStorage: 0, reservations: 0 });
  const client = await connectPg(server.databaseUrl);
  const events = await client.query('select count(*)::int as n from media_event where team_id = $1', [owner.teamId]).finally(() => client.end());
  t.equal(events.rows[0].n, 0, 'no event');
});
