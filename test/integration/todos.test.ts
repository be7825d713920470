import { request as httpRequest } from 'node:http';
import t from 'tap';
import { hashContent, loadXxhash } from '../../src/uploads/hashing/content-hash.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { settledObjects } from '../helpers/storage.ts';
import { memberWithKey, teamLogRows } from '../helpers/team-admin.ts';
import { KiB, multipartBody, pngLike, send } from '../helpers/uploads.ts';
import { eventually } from '../helpers/wait.ts';
import { fileState } from './team-files-suite.ts';

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const xxhash = await loadXxhash();
const team = await server.createTeam('Todos');
const base = `/v1/teams/${team.teamId}`;
const manager = await memberWithKey(server, team.teamId, 'manager', ['team.todos.view', 'team.todos.manage']);
const viewer = await memberWithKey(server, team.teamId, 'viewer', ['team.todos.view']);
const outsider = await memberWithKey(server, team.teamId, 'outsider', []);

const todoFileJson = (todoId: string, key: string, body: unknown) =>
  send(server, 'POST', `${base}/todos/${todoId}/files`, key, Buffer.from(JSON.stringify(body)), { 'content-type': 'application/json' });
const todoFileMultipart = (todoId: string, key: string, content: Buffer, fileName: string) => {
  const { body, contentType } = multipartBody([{ content, fileName }]);
  return send(server, 'POST', `${base}/todos/${todoId}/files/multipart`, key, body, { 'content-type': contentType });
};

t.test('boards: create, list, change, delete; maxTodoBoards (402)', async (t) => {
  const first = await server.media('POST', `${base}/todo-boards`, manager.key, { body: { title: '  Release  ', description: 'what ships', sort: 2 } });
  t.equal(first.status, 201);
  t.match(first.body, { teamId: team.teamId, title: 'Release', description: 'what ships', sort: 2 });
  const over = await server.media('POST', `${base}/todo-boards`, manager.key, { body: { title: 'Second' } });
  expectError(t, over, 402, 'error.teamLimits.maxTodoBoards');
  t.equal(over.body.value, 1, 'the plan default is one board');
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTodoBoards: 3 });
  const second = await server.media('POST', `${base}/todo-boards`, manager.key, { body: { title: 'Backlog', sort: 1 } });
  t.equal(second.status, 201);
  const list = await server.media('GET', `${base}/todo-boards`, viewer.key);
  t.same(list.body.data.map((board: any) => board.title), ['Backlog', 'Release'], 'by sort');
  t.equal(list.body.count, 2);
  const changed = await server.media('PATCH', `${base}/todo-boards/${second.body.id}`, manager.key, { body: { title: 'Later' } });
  t.match(changed.body, { title: 'Later', sort: 1 });
  for (const body of [{ title: '' }, { title: 'x'.repeat(101) }, { sort: 1.5 }, { other: 1 }]) {
    expectError(t, await server.media('PATCH', `${base}/todo-boards/${second.body.id}`, manager.key, { body }), 400, 'error.badRequest');
  }
  expectError(t, await server.media('POST', `${base}/todo-boards`, manager.key, { body: {} }), 400, 'error.missingArgument.title');
  expectError(t, await server.media('POST', `${base}/todo-boards`, viewer.key, { body: { title: 'No' } }), 403, 'error.forbidden');
  expectError(t, await server.media('GET', `${base}/todo-boards`, outsider.key), 403, 'error.forbidden');
  t.equal((await server.media('DELETE', `${base}/todo-boards/${second.body.id}`, manager.key)).status, 204);
  expectError(t, await server.media('DELETE', `${base}/todo-boards/${second.body.id}`, manager.key), 404, 'error.notFound');
  const racing = await Promise.all([1, 2, 3].map((i) => server.media('POST', `${base}/todo-boards`, manager.key, { body: { title: `Race ${i}` } })));
  t.same(racing.map((r) => r.status).sort(), [201, 201, 402], 'concurrent creations respect the limit');
});

t.test('to-dos: create, list with filters and paging, read, change, delete; maxTodos (402)', async (t) => {
  const board = (await server.media('GET', `${base}/todo-boards`, viewer.key)).body.data[0];
  const todos = `${base}/todo-boards/${board.id}/todos`;
  const created = await server.media('POST', todos, manager.key, {
    body: { title: 'Write docs', description: 'all of them', assigneeTeamMemberId: viewer.memberId, dueDate: '2030-01-02T03:04:05.000Z', sort: 5 },
  });
  t.equal(created.status, 201);
  t.match(created.body, {
    boardId: board.id, title: 'Write docs', state: 'open', assigneeTeamMemberId: viewer.memberId, dueDate: '2030-01-02T03:04:05.000Z', sort: 5,
    creatorTeamMemberId: manager.memberId,
  });
  const other = await server.media('POST', todos, manager.key, { body: { title: 'Test', state: 'in_progress', sort: 1 } });
  t.equal(other.status, 201);
  t.same((await server.media('GET', todos, viewer.key)).body.data.map((todo: any) => todo.title), ['Test', 'Write docs']);
  t.same((await server.media('GET', `${todos}?state=in_progress`, viewer.key)).body.data.map((todo: any) => todo.title), ['Test']);
  t.same((await server.media('GET', `${todos}?assigneeTeamMemberId=${viewer.memberId}`, viewer.key)).body.data.map((todo: any) => todo.title), ['Write docs']);
  const paged = await server.media('GET', todos, viewer.key, { headers: { pageSize: '1', pageNumber: '2' } });
  t.same(paged.body.data.map((todo: any) => todo.title), ['Write docs']);
  t.equal(paged.body.count, 2);
  expectError(t, await server.media('GET', `${todos}?state=closed`, viewer.key), 400, 'error.badRequest');

  const changed = await server.media('PATCH', `${base}/todos/${created.body.id}`, manager.key, { body: { state: 'done', assigneeTeamMemberId: null, dueDate: null } });
  t.match(changed.body, { state: 'done', assigneeTeamMemberId: null, dueDate: null, title: 'Write docs' });
  t.match((await server.media('GET', `${base}/todos/${created.body.id}`, viewer.key)).body, { state: 'done' });
  expectError(t, await server.media('PATCH', `${base}/todos/${created.body.id}`, manager.key, { body: { assigneeTeamMemberId: '00000000-0000-4000-8000-000000000000' } }), 404, 'error.notFound');
  expectError(t, await server.media('PATCH', `${base}/todos/${created.body.id}`, manager.key, { body: { state: 'closed' } }), 400, 'error.badRequest');
  expectError(t, await server.media('PATCH', `${base}/todos/${created.body.id}`, viewer.key, { body: { state: 'open' } }), 403, 'error.forbidden');
  expectError(t, await server.media('POST', `${base}/todo-boards/00000000-0000-4000-8000-000000000000/todos`, manager.key, { body: { title: 'x' } }), 404, 'error.notFound');

  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTodos: 2 });
  expectError(t, await server.media('POST', todos, manager.key, { body: { title: 'Third' } }), 402, 'error.teamLimits.maxTodos');
  t.equal((await server.media('DELETE', `${base}/todos/${other.body.id}`, manager.key)).status, 204);
  expectError(t, await server.media('GET', `${base}/todos/${other.body.id}`, viewer.key), 404, 'error.notFound');
  t.equal((await server.media('POST', todos, manager.key, { body: { title: 'Third' } })).status, 201, 'a deleted to-do frees its place');
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTodos: 50 });
});

t.test('to-do files: upload (JSON, multipart), list, read, preview, delete; deleted with their to-do (bytes freed, logged)', async (t) => {
  const board = (await server.media('GET', `${base}/todo-boards`, viewer.key)).body.data[0];
  const todo = (await server.media('POST', `${base}/todo-boards/${board.id}/todos`, manager.key, { body: { title: 'With files', assigneeTeamMemberId: viewer.memberId } })).body;
  const before = await fileState(server, team.teamId);
  const content = Buffer.from('attachment\n'.repeat(100));
  const json = await todoFileJson(todo.id, manager.key, { file: `data:text/plain;base64,${content.toString('base64')}`, fileName: 'a.txt' });
  t.equal(json.status, 201, JSON.stringify(json.body));
  t.equal(json.body.usedTeamStorage, before.usedStorage + content.length);
  const image = pngLike(300 * KiB);
  const multipart = await todoFileMultipart(todo.id, manager.key, image, 'b.png');
  t.equal(multipart.status, 201);
  t.equal(multipart.body.usedTeamStorage, before.usedStorage + content.length + image.length);

  const list = await server.media('GET', `${base}/todos/${todo.id}/files`, viewer.key);
  t.equal(list.status, 200);
  t.same(list.body.data.map((file: any) => file.id), [multipart.body.id, json.body.id]);
  t.equal(list.body.count, 2);
  const read = await server.media('GET', `${base}/todos/${todo.id}/files/${json.body.id}`, viewer.key);
  t.match(read.body, { todoId: todo.id, uploadTeamMemberId: manager.memberId, path: 'a.txt', size: content.length, hash: hashContent(xxhash, content) });
  const preview = await fetch(read.body.previewUrl);
  t.equal(preview.status, 200);
  t.ok(Buffer.from(await preview.arrayBuffer()).equals(content));
  t.match((await teamLogRows(server, team.teamId)).filter((row) => row.action === 'TODO_FILE_UPLOADED'), [
    { team_member_id: manager.memberId, target_team_member_id: viewer.memberId, target_identifier: json.body.id, data: { todoId: todo.id, fileName: 'a.txt' } },
    { target_identifier: multipart.body.id },
  ]);
  const usage = await server.media('GET', `/v1/cdn/media/${team.teamId}/usage`, team.key);
  t.match(usage.body.storage, { todoFileBytes: content.length + image.length, teamFileBytes: 0, mediaBytes: 0 });

  // Refusals: a missing to-do before the body, permissions, blocked types.
  const missing = '00000000-0000-4000-8000-000000000000';
  expectError(t, await todoFileMultipart(missing, manager.key, image, 'c.png'), 404, 'error.notFound');
  expectError(t, await todoFileJson(todo.id, viewer.key, { file: 'AAAA', fileName: 'x.bin' }), 403, 'error.forbidden');
  expectError(t, await todoFileJson(todo.id, manager.key, { file: 'AAAA', fileName: 'x.html' }), 415, 'error.unsupportedMediaType');
  expectError(t, await server.media('GET', `${base}/todos/${missing}/files/${json.body.id}`, viewer.key), 404, 'error.notFound');
  expectError(t, await server.media('DELETE', `${base}/todos/${todo.id}/files/${json.body.id}`, viewer.key), 403, 'error.forbidden');

  const deleted = await server.media('DELETE', `${base}/todos/${todo.id}/files/${json.body.id}`, manager.key);
  t.same(deleted.body, { deleted: json.body.id, usedTeamStorage: before.usedStorage + image.length });
  t.match((await teamLogRows(server, team.teamId)).at(-1), { action: 'TODO_FILE_DELETED', target_identifier: json.body.id, data: { todoId: todo.id } });

  // The to-do goes with its files: bytes freed, objects removed, each file logged.
  const again = await todoFileJson(todo.id, manager.key, { file: content.toString('base64'), fileName: 'again.txt' });
  t.equal(again.status, 201);
  t.equal((await settledObjects('fs', server.dataDir, team.teamId, 2, 'todo-files')).objects.length, 2);
  t.equal((await server.media('DELETE', `${base}/todos/${todo.id}`, manager.key)).status, 204);
  const after = await fileState(server, team.teamId);
  t.equal(after.todoFiles, 0, 'no to-do file row left');
  t.equal(after.usedStorage, before.usedStorage, 'their bytes are freed');
  t.equal(after.usedStorage, after.sumOfSizes);
  t.equal((await settledObjects('fs', server.dataDir, team.teamId, 0, 'todo-files')).objects.length, 0, 'their objects are removed');
  const deletions = (await teamLogRows(server, team.teamId)).filter((row) => row.action === 'TODO_FILE_DELETED').map((row) => row.target_identifier);
  t.same(deletions.slice(-2).sort(), [multipart.body.id, again.body.id].sort());

  // A board goes with its to-dos and their files.
  const onBoard = (await server.media('POST', `${base}/todo-boards/${board.id}/todos`, manager.key, { body: { title: 'On board' } })).body;
  t.equal((await todoFileJson(onBoard.id, manager.key, { file: content.toString('base64'), fileName: 'c.txt' })).status, 201);
  t.equal((await server.media('DELETE', `${base}/todo-boards/${board.id}`, manager.key)).status, 204);
  const gone = await fileState(server, team.teamId);
  t.equal(gone.todoFiles, 0);
  t.equal(gone.usedStorage, before.usedStorage);
  expectError(t, await server.media('GET', `${base}/todos/${onBoard.id}`, viewer.key), 404, 'error.notFound');
});

t.test('a to-do deleted while one of its files uploads: the upload gets 404 and leaves nothing', async (t) => {
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxTodoBoards: 5 });
  const board = (await server.media('POST', `${base}/todo-boards`, manager.key, { body: { title: 'Race' } })).body;
  const todo = (await server.media('POST', `${base}/todo-boards/${board.id}/todos`, manager.key, { body: { title: 'Going away' } })).body;
  const before = await fileState(server, team.teamId);
  const { body, contentType } = multipartBody([{ content: pngLike(6 * 1024 * KiB), fileName: 'late.png' }]);
  const request = httpRequest(`${server.baseUrl}${base}/todos/${todo.id}/files/multipart`, {
    method: 'POST', headers: { authorization: `Bearer ${manager.key}`, 'content-type': contentType, 'content-length': String(body.length) },
  });
  const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
    request.on('response', (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
    });
    request.on('error', reject);
  });
  request.write(body.subarray(0, body.length / 2));
  t.ok(await eventually(async () => (await fileState(server, team.teamId)).reservations === 1, 10_000), 'the upload is streaming (it holds a reservation)');
  t.equal((await server.media('DELETE', `${base}/todos/${todo.id}`, manager.key)).status, 204);
  request.end(body.subarray(body.length / 2));
  const response = await answer;
  t.equal(response.status, 404);
  t.equal(response.body.messageKey, 'error.notFound');
  const after = await fileState(server, team.teamId);
  t.same(after, { ...before, reservations: 0, reservedStorage: 0 }, 'no row, no counted or reserved byte');
  t.equal((await settledObjects('fs', server.dataDir, team.teamId, 0, 'todo-files')).objects.length, 0, 'no object');
});
