import { randomUUID } from 'node:crypto';
import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { pngLike, uploadJson, uploadMultipart } from '../helpers/uploads.ts';
import { allPermissions } from '../../src/auth/permissions.ts';
import { memberWithKey, tableSnapshot } from '../helpers/team-admin.ts';

// Team A's key against team B's resources and team B's key against team A's routes,
// on every media route: never a byte of the other team's data, never a change to it.
// Many requests with one key: the rate limit is not what this file is about.
// Private targets allowed so that B's automation can point at loopback (nothing is delivered to it).
const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000, AUTOMATION_ALLOW_PRIVATE_TARGETS: true } });
const a = await server.createTeam('TeamA');
const b = await server.createTeam('TeamB');

const bFolder = (await server.media('POST', `/v1/cdn/media/${b.teamId}/folders`, b.key, { body: { name: 'secret-folder' } })).body;
const bPublic = (await uploadMultipart(server, b.teamId, b.key, { content: pngLike(500), fileName: 'b-public.png' }, `folderId=${bFolder.id}&tags=b-tag`)).body;
const bPrivate = (await uploadJson(server, b.teamId, b.key, { file: pngLike(400).toString('base64'), fileName: 'b-private.png' })).body;
await uploadMultipart(server, a.teamId, a.key, { content: pngLike(300), fileName: 'a.png' });
const bAutomation = (await server.media('POST', `/v1/teams/${b.teamId}/automations`, b.key, {
  body: { name: 'b-secret-hook', url: 'http://127.0.0.1:9/b-secret-path', tags: ['b-tag'] },
})).body;

const bGroup = (await server.admin('POST', `/v1/admin/teams/${b.teamId}/groups`, { name: 'b-secret-group', permissions: ['team.media.view'] })).body;
const aGroup = (await server.admin('POST', `/v1/admin/teams/${a.teamId}/groups`, { name: 'a-group', permissions: [] })).body;

const bNote = (await server.media('POST', `/v1/teams/${b.teamId}/members/${b.ownerId}/notes`, b.key, { body: { note: 'b-secret-note' } })).body;

const bInvite = (await server.media('POST', `/v1/teams/${b.teamId}/invites`, b.key, { body: { groupId: bGroup.id } })).body;
// B's subscription (its `me` view carries it): the secret is its price id.
await server.admin('PUT', `/v1/admin/teams/${b.teamId}/subscription`, { plan: 'enterprise', priceId: 'b-secret-price' });

const bTeamFile = (await server.media('POST', `/v1/teams/${b.teamId}/files`, b.key, { body: { file: Buffer.from('b-secret-content').toString('base64'), fileName: 'b-secret-file.txt' } })).body;
const bBoard = (await server.media('POST', `/v1/teams/${b.teamId}/todo-boards`, b.key, { body: { title: 'b-secret-board' } })).body;
const bTodo = (await server.media('POST', `/v1/teams/${b.teamId}/todo-boards/${bBoard.id}/todos`, b.key, { body: { title: 'b-secret-todo' } })).body;
const bTodoFile = (await server.media('POST', `/v1/teams/${b.teamId}/todos/${bTodo.id}/files`, b.key, { body: { file: 'AAAA', fileName: 'b-secret-todo-file.bin' } })).body;
const bMeeting = (await server.media('POST', `/v1/teams/${b.teamId}/meetings`, b.key, { body: { title: 'b-secret-meeting', dateTime: '2031-01-01T10:00:00Z', teamMemberIds: [b.ownerId] } })).body;
const bLogoff = (await server.media('POST', `/v1/teams/${b.teamId}/logoffs`, b.key, { body: { message: 'b-secret-logoff', meetingId: bMeeting.id } })).body;
const bNews = (await server.media('POST', `/v1/teams/${b.teamId}/news`, b.key, { body: { title: 'b-secret-news', content: 'b-secret-news', groupIds: [bGroup.id] } })).body;
const bLink = (await server.media('POST', `/v1/teams/${b.teamId}/links`, b.key, { body: { title: 'b-secret-link', destination: 'https://b-secret-link.example' } })).body;
await server.media('PUT', `/v1/teams/${b.teamId}/news-banner`, b.key, { body: { title: 'b-secret-banner', type: 'INFO', messageType: 'TEXT' } });
await server.media('POST', `/v1/teams/${b.teamId}/portal`, b.key, { body: { subdomain: 'bsecretportal', name: 'b-secret-portal' } });
/** Preview links are signed anew on every read; the rest of a file must not change. */
const withoutLinks = (list: { data: Record<string, unknown>[] }) => ({ ...list, data: list.data.map(({ previewUrl: _u, previewUrlExpiresAt: _e, ...file }) => file) });

async function snapshotOfB() {
  const lists = {
    media: `/v1/cdn/media/${b.teamId}`,
    folders: `/v1/cdn/media/${b.teamId}/folders`,
    automations: `/v1/teams/${b.teamId}/automations`,
    deliveries: `/v1/teams/${b.teamId}/automations/${bAutomation.id}/deliveries`,
    team: `/v1/teams/${b.teamId}`,
    logs: `/v1/teams/${b.teamId}/logs`,
    members: `/v1/teams/${b.teamId}/members`,
    owner: `/v1/teams/${b.teamId}/members/${b.ownerId}`,
    groups: `/v1/teams/${b.teamId}/groups`,
    keys: `/v1/teams/${b.teamId}/api-keys`,
    notes: `/v1/teams/${b.teamId}/members/${b.ownerId}/notes`,
    discord: `/v1/teams/${b.teamId}/members/${b.ownerId}/discord`,
    modules: `/v1/teams/${b.teamId}/modules`,
    invites: `/v1/teams/${b.teamId}/invites`,
    me: `/v1/teams/${b.teamId}/me`,
    teamFiles: `/v1/teams/${b.teamId}/files`,
    boards: `/v1/teams/${b.teamId}/todo-boards`,
    todos: `/v1/teams/${b.teamId}/todo-boards/${bBoard.id}/todos`,
    todoFiles: `/v1/teams/${b.teamId}/todos/${bTodo.id}/files`,
    meetings: `/v1/teams/${b.teamId}/meetings`,
    meeting: `/v1/teams/${b.teamId}/meetings/${bMeeting.id}`,
    logoffs: `/v1/teams/${b.teamId}/logoffs`,
    news: `/v1/teams/${b.teamId}/news`,
    newsBanner: `/v1/teams/${b.teamId}/news-banner`,
    links: `/v1/teams/${b.teamId}/links`,
    portal: `/v1/teams/${b.teamId}/portal`,
  };
  const snapshot = Object.fromEntries(await Promise.all(Object.entries(lists).map(async ([name, path]) => [name, (await server.media('GET', path, b.key)).body])));
  // Preview links are signed anew on every read.
  return JSON.stringify({ ...snapshot, teamFiles: withoutLinks(snapshot.teamFiles), todoFiles: withoutLinks(snapshot.todoFiles) });
}

// What B owns that A's requests never carry (the ids A sends may be echoed back in `value`).
const secrets = ['b-secret-meeting', 'b-secret-logoff', 'b-secret-news', 'b-secret-link', 'b-secret-banner', 'bsecretportal', 'b-secret-portal', 'TeamB', 'b-secret-price', 'b-secret-file.txt', 'b-secret-board', 'b-secret-todo', 'b-secret-content', 'b-secret-note', 'b-secret-group', 'b-public.png', 'b-private.png', 'secret-folder', 'b-tag', bPublic.hash, 'b-secret-hook', 'b-secret-path', bAutomation.secret];

interface Case {
  name: string;
  method: string;
  path: string;
  key: string;
  body?: unknown;
  status: number;
}

const A = `/v1/cdn/media/${a.teamId}`;
const AA = `/v1/teams/${a.teamId}/automations`;
const BA = `/v1/teams/${b.teamId}/automations/${bAutomation.id}`;
const AT = `/v1/teams/${a.teamId}`;
const BT = `/v1/teams/${b.teamId}`;
/** The news, banner, link and portal routes under a team's path, with B's ids. */
const newsLinkPortalRoutes = (base: string) => [
  ['GET', `${base}/news`], ['POST', `${base}/news`], ['GET', `${base}/news/${bNews.id}`], ['PATCH', `${base}/news/${bNews.id}`], ['DELETE', `${base}/news/${bNews.id}`],
  ['POST', `${base}/news/${bNews.id}/publish`], ['POST', `${base}/news/${bNews.id}/unpublish`],
  ['GET', `${base}/news-banner`], ['PUT', `${base}/news-banner`], ['DELETE', `${base}/news-banner`],
  ['GET', `${base}/links`], ['POST', `${base}/links`], ['GET', `${base}/links/${bLink.id}`], ['PATCH', `${base}/links/${bLink.id}`], ['DELETE', `${base}/links/${bLink.id}`],
  ['GET', `${base}/portal`], ['POST', `${base}/portal`], ['PATCH', `${base}/portal`], ['GET', `${base}/portal/domain`], ['PUT', `${base}/portal/domain`],
  ['POST', `${base}/portal/domain/verify`], ['DELETE', `${base}/portal/domain`],
];
const cases: Case[] = [
  // Team B's key on team A's routes: 401, as if the key did not exist.
  ...[
    ['GET', A], ['GET', `${A}/folders`], ['GET', `${A}/tags`], ['GET', `${A}/usage`], ['GET', `${A}/${bPublic.id}`],
    ['POST', `${A}/folders`], ['POST', `${A}/bulk`], ['PATCH', `${A}/update/${bPublic.id}`], ['DELETE', `${A}/delete/${bPublic.id}`],
    ['PATCH', `${A}/folders/${bFolder.id}`], ['DELETE', `${A}/folders/${bFolder.id}`], ['POST', `${A}/upload`], ['POST', `${A}/upload-urls`],
    ['GET', AA], ['POST', AA], ['GET', `${AA}/${bAutomation.id}`], ['PATCH', `${AA}/${bAutomation.id}`], ['DELETE', `${AA}/${bAutomation.id}`],
  ].map(([method, path]) => ({ name: `B's key: ${method} ${path!.replace(a.teamId, 'A')}`, method: method!, path: path!, key: b.key, body: {}, status: 401 })),
  // Team A's key with team B's ids: 404, never B's data.
  { name: "A's key: link of B's file", method: 'GET', path: `${A}/${bPublic.id}`, key: a.key, status: 404 },
  { name: "A's key: update B's file", method: 'PATCH', path: `${A}/update/${bPublic.id}`, key: a.key, body: { fileName: 'stolen.png', public: true }, status: 404 },
  { name: "A's key: delete B's file", method: 'DELETE', path: `${A}/delete/${bPrivate.id}`, key: a.key, status: 404 },
  { name: "A's key: list B's folder", method: 'GET', path: `${A}?folderId=${bFolder.id}`, key: a.key, status: 404 },
  { name: "A's key: rename B's folder", method: 'PATCH', path: `${A}/folders/${bFolder.id}`, key: a.key, body: { name: 'mine' }, status: 404 },
  { name: "A's key: delete B's folder", method: 'DELETE', path: `${A}/folders/${bFolder.id}`, key: a.key, status: 404 },
  { name: "A's key: folder under B's folder", method: 'POST', path: `${A}/folders`, key: a.key, body: { name: 'inside', parentId: bFolder.id }, status: 404 },
  { name: "A's key: upload into B's folder", method: 'POST', path: `${A}/upload`, key: a.key, body: { file: 'AAAA', fileName: 'x.bin', folderId: bFolder.id }, status: 404 },
  { name: "A's key: upload URL into B's folder", method: 'POST', path: `${A}/upload-urls`, key: a.key, body: { folderId: bFolder.id }, status: 404 },
  { name: "A's key: move own files into B's folder", method: 'POST', path: `${A}/bulk`, key: a.key, body: { action: 'move', ids: [bPublic.id], folderId: bFolder.id }, status: 404 },
  // Automations: B's ids under A's path are not found; A's key on B's path is not a key of B.
  ...[
    ['GET', `${AA}/${bAutomation.id}`], ['PATCH', `${AA}/${bAutomation.id}`], ['DELETE', `${AA}/${bAutomation.id}`],
    ['POST', `${AA}/${bAutomation.id}/rotate-secret`], ['GET', `${AA}/${bAutomation.id}/deliveries`],
    ['POST', `${AA}/${bAutomation.id}/deliveries/retry-failed`],
  ].map(([method, path]) => ({ name: `A's key: ${method} ${path!.replace(a.teamId, 'A')}`, method: method!, path: path!, key: a.key, body: { name: 'mine', enabled: false }, status: 404 })),
  ...[['GET', BA], ['PATCH', BA], ['DELETE', BA], ['POST', `${BA}/rotate-secret`], ['GET', `${BA}/deliveries`]]
    .map(([method, path]) => ({ name: `A's key: ${method} ${path!.replace(b.teamId, 'B')}`, method: method!, path: path!, key: a.key, body: { name: 'mine' }, status: 401 })),
  // Team administration routes: another team's key is not a key of this team (401), either way round.
  ...[
    ['GET', AT], ['GET', `${AT}/minimal`], ['GET', `${AT}/join-info`], ['PATCH', AT], ['POST', `${AT}/archive`], ['POST', `${AT}/unarchive`], ['GET', `${AT}/logs`],
    ['GET', `${AT}/members`], ['GET', `${AT}/members/${b.ownerId}`], ['PATCH', `${AT}/members/${b.ownerId}`], ['DELETE', `${AT}/members/${b.ownerId}`],
    ['POST', `${AT}/leave`], ['GET', `${AT}/dashboard`],
    ['GET', `${AT}/groups`], ['POST', `${AT}/groups`], ['PUT', `${AT}/groups/order`], ['PATCH', `${AT}/groups/${bGroup.id}`], ['DELETE', `${AT}/groups/${bGroup.id}`],
    ['PUT', `${AT}/groups/${bGroup.id}/members/${b.ownerId}`], ['DELETE', `${AT}/groups/${bGroup.id}/members/${b.ownerId}`],
    ['PUT', `${AT}/members/${b.ownerId}/groups`],
    ['GET', `${AT}/members/${b.ownerId}/notes`], ['POST', `${AT}/members/${b.ownerId}/notes`], ['DELETE', `${AT}/members/${b.ownerId}/notes/${bNote.id}`],
    ['GET', `${AT}/members/${b.ownerId}/discord`],
    ['GET', `${AT}/modules`], ['PATCH', `${AT}/modules`], ['GET', `${AT}/plan`], ['GET', `${AT}/subscriptions`], ['GET', `${AT}/me`],
    ['GET', `${AT}/invites`], ['POST', `${AT}/invites`], ['DELETE', `${AT}/invites`], ['DELETE', `${AT}/invites/${bInvite.id}`],
    ['GET', `${AT}/api-keys`], ['POST', `${AT}/api-keys`], ['POST', `${AT}/api-keys/${b.keyId}/reroll`], ['DELETE', `${AT}/api-keys/${b.keyId}`],
    ['GET', `${AT}/files`], ['POST', `${AT}/files`], ['POST', `${AT}/files/multipart`], ['GET', `${AT}/files/${bTeamFile.id}`], ['DELETE', `${AT}/files/${bTeamFile.id}`],
    ['GET', `${AT}/todo-boards`], ['POST', `${AT}/todo-boards`], ['PATCH', `${AT}/todo-boards/${bBoard.id}`], ['DELETE', `${AT}/todo-boards/${bBoard.id}`],
    ['GET', `${AT}/todo-boards/${bBoard.id}/todos`], ['POST', `${AT}/todo-boards/${bBoard.id}/todos`], ['GET', `${AT}/todos/${bTodo.id}`], ['PATCH', `${AT}/todos/${bTodo.id}`],
    ['DELETE', `${AT}/todos/${bTodo.id}`], ['GET', `${AT}/todos/${bTodo.id}/files`], ['POST', `${AT}/todos/${bTodo.id}/files`], ['POST', `${AT}/todos/${bTodo.id}/files/multipart`],
    ['GET', `${AT}/todos/${bTodo.id}/files/${bTodoFile.id}`], ['DELETE', `${AT}/todos/${bTodo.id}/files/${bTodoFile.id}`],
    ...newsLinkPortalRoutes(AT),
  ].map(([method, path]) => ({ name: `B's key: ${method} ${path!.replace(a.teamId, 'A')}`, method: method!, path: path!, key: b.key, body: { name: 'mine' }, status: 401 })),
  ...[
    ['GET', BT], ['GET', `${BT}/minimal`], ['GET', `${BT}/join-info`], ['PATCH', BT], ['POST', `${BT}/archive`], ['POST', `${BT}/unarchive`], ['GET', `${BT}/logs`],
    ['GET', `${BT}/members`], ['GET', `${BT}/members/${b.ownerId}`], ['PATCH', `${BT}/members/${b.ownerId}`], ['DELETE', `${BT}/members/${b.ownerId}`],
    ['POST', `${BT}/leave`], ['GET', `${BT}/dashboard`],
    ['GET', `${BT}/groups`], ['POST', `${BT}/groups`], ['PUT', `${BT}/groups/order`], ['PATCH', `${BT}/groups/${bGroup.id}`], ['DELETE', `${BT}/groups/${bGroup.id}`],
    ['PUT', `${BT}/groups/${bGroup.id}/members/${b.ownerId}`], ['DELETE', `${BT}/groups/${bGroup.id}/members/${b.ownerId}`],
    ['PUT', `${BT}/members/${b.ownerId}/groups`],
    ['GET', `${BT}/members/${b.ownerId}/notes`], ['POST', `${BT}/members/${b.ownerId}/notes`], ['DELETE', `${BT}/members/${b.ownerId}/notes/${bNote.id}`],
    ['GET', `${BT}/members/${b.ownerId}/discord`],
    ['GET', `${BT}/modules`], ['PATCH', `${BT}/modules`], ['GET', `${BT}/plan`], ['GET', `${BT}/subscriptions`], ['GET', `${BT}/me`],
    ['GET', `${BT}/invites`], ['POST', `${BT}/invites`], ['DELETE', `${BT}/invites`], ['DELETE', `${BT}/invites/${bInvite.id}`],
    ['GET', `${BT}/api-keys`], ['POST', `${BT}/api-keys`], ['POST', `${BT}/api-keys/${b.keyId}/reroll`], ['DELETE', `${BT}/api-keys/${b.keyId}`],
    ['GET', `${BT}/files`], ['POST', `${BT}/files`], ['POST', `${BT}/files/multipart`], ['GET', `${BT}/files/${bTeamFile.id}`], ['DELETE', `${BT}/files/${bTeamFile.id}`],
    ['GET', `${BT}/todo-boards`], ['POST', `${BT}/todo-boards`], ['PATCH', `${BT}/todo-boards/${bBoard.id}`], ['DELETE', `${BT}/todo-boards/${bBoard.id}`],
    ['GET', `${BT}/todo-boards/${bBoard.id}/todos`], ['POST', `${BT}/todo-boards/${bBoard.id}/todos`], ['GET', `${BT}/todos/${bTodo.id}`], ['PATCH', `${BT}/todos/${bTodo.id}`],
    ['DELETE', `${BT}/todos/${bTodo.id}`], ['GET', `${BT}/todos/${bTodo.id}/files`], ['POST', `${BT}/todos/${bTodo.id}/files`], ['POST', `${BT}/todos/${bTodo.id}/files/multipart`],
    ['GET', `${BT}/todos/${bTodo.id}/files/${bTodoFile.id}`], ['DELETE', `${BT}/todos/${bTodo.id}/files/${bTodoFile.id}`],
    ...newsLinkPortalRoutes(BT),
  ].map(([method, path]) => ({ name: `A's key: ${method} ${path!.replace(b.teamId, 'B')}`, method: method!, path: path!, key: a.key, body: { name: 'mine' }, status: 401 })),
  // B's members under A's path: not found.
  ...[['GET', `${AT}/members/${b.ownerId}`], ['PATCH', `${AT}/members/${b.ownerId}`], ['DELETE', `${AT}/members/${b.ownerId}`]]
    .map(([method, path]) => ({ name: `A's key: ${method} ${path!.replace(a.teamId, 'A')} (B's owner)`, method: method!, path: path!, key: a.key, body: { sort: 3 }, status: 404 })),
  // B's groups (and B's members in A's groups) under A's path: not found.
  ...[['PATCH', `${AT}/groups/${bGroup.id}`], ['DELETE', `${AT}/groups/${bGroup.id}`], ['PUT', `${AT}/groups/${bGroup.id}/members/${a.ownerId}`],
    ['DELETE', `${AT}/groups/${bGroup.id}/members/${b.ownerId}`], ['PUT', `${AT}/groups/${aGroup.id}/members/${b.ownerId}`], ['PUT', `${AT}/groups/order`]]
    .map(([method, path]) => ({ name: `A's key: ${method} ${path!.replace(a.teamId, 'A')} (B's group or member)`, method: method!, path: path!, key: a.key,
      body: path!.endsWith('/order') ? { groupIds: [bGroup.id] } : { sort: 1 }, status: 404 })),
  // B's keys and members under A's path: not found.
  { name: "A's key: notes of B's owner", method: 'GET', path: `${AT}/members/${b.ownerId}/notes`, key: a.key, status: 404 },
  { name: "A's key: Discord status of B's owner", method: 'GET', path: `${AT}/members/${b.ownerId}/discord`, key: a.key, status: 404 },
  { name: "A's key: a note on B's owner", method: 'POST', path: `${AT}/members/${b.ownerId}/notes`, key: a.key, body: { note: 'mine' }, status: 404 },
  { name: "A's key: delete B's note", method: 'DELETE', path: `${AT}/members/${b.ownerId}/notes/${bNote.id}`, key: a.key, status: 404 },
  { name: "A's key: delete B's note under A's owner", method: 'DELETE', path: `${AT}/members/${a.ownerId}/notes/${bNote.id}`, key: a.key, status: 404 },
  { name: "A's key: B's owner into groups", method: 'PUT', path: `${AT}/members/${b.ownerId}/groups`, key: a.key, body: { groupIds: [aGroup.id] }, status: 404 },
  { name: "A's key: A's owner into B's group", method: 'PUT', path: `${AT}/members/${a.ownerId}/groups`, key: a.key, body: { groupIds: [bGroup.id] }, status: 404 },
  { name: "A's key: delete B's invite", method: 'DELETE', path: `${AT}/invites/${bInvite.id}`, key: a.key, status: 404 },
  { name: "A's key: invite into B's group", method: 'POST', path: `${AT}/invites`, key: a.key, body: { groupId: bGroup.id }, status: 404 },
  { name: "A's key: reroll B's key", method: 'POST', path: `${AT}/api-keys/${b.keyId}/reroll`, key: a.key, status: 404 },
  { name: "A's key: delete B's key", method: 'DELETE', path: `${AT}/api-keys/${b.keyId}`, key: a.key, status: 404 },
  { name: "A's key: a key for B's owner", method: 'POST', path: `${AT}/api-keys`, key: a.key, body: { teamMemberId: b.ownerId }, status: 404 },
  // B's team files, boards, to-dos and to-do files under A's path: not found.
  ...[
    ['GET', `${AT}/files/${bTeamFile.id}`], ['DELETE', `${AT}/files/${bTeamFile.id}`], ['PATCH', `${AT}/todo-boards/${bBoard.id}`], ['DELETE', `${AT}/todo-boards/${bBoard.id}`],
    ['GET', `${AT}/todo-boards/${bBoard.id}/todos`], ['POST', `${AT}/todo-boards/${bBoard.id}/todos`], ['GET', `${AT}/todos/${bTodo.id}`], ['PATCH', `${AT}/todos/${bTodo.id}`],
    ['DELETE', `${AT}/todos/${bTodo.id}`], ['GET', `${AT}/todos/${bTodo.id}/files`], ['POST', `${AT}/todos/${bTodo.id}/files`],
    ['GET', `${AT}/todos/${bTodo.id}/files/${bTodoFile.id}`], ['DELETE', `${AT}/todos/${bTodo.id}/files/${bTodoFile.id}`],
  ].map(([method, path]) => ({ name: `A's key: ${method} ${path!.replace(a.teamId, 'A')} (B's file, board or to-do)`, method: method!, path: path!, key: a.key,
    body: path!.includes('/files') ? { file: 'AAAA', fileName: 'mine.bin' } : { title: 'mine' }, status: 404 })),
  { name: "A's key: a team file for B's owner", method: 'POST', path: `${AT}/files`, key: a.key, body: { file: 'AAAA', fileName: 'x.bin', targetTeamMemberId: b.ownerId }, status: 404 },
  { name: "A's key: a to-do assigned to B's owner", method: 'POST', path: `${AT}/todo-boards/${bBoard.id}/todos`, key: a.key, body: { title: 'x', assigneeTeamMemberId: b.ownerId }, status: 404 },
  // B's news and links under A's path, and B's group as a news target: not found.
  ...[
    ['GET', `${AT}/news/${bNews.id}`], ['PATCH', `${AT}/news/${bNews.id}`], ['DELETE', `${AT}/news/${bNews.id}`], ['POST', `${AT}/news/${bNews.id}/publish`],
    ['POST', `${AT}/news/${bNews.id}/unpublish`], ['GET', `${AT}/links/${bLink.id}`], ['PATCH', `${AT}/links/${bLink.id}`], ['DELETE', `${AT}/links/${bLink.id}`],
  ].map(([method, path]) => ({ name: `A's key: ${method} ${path!.replace(a.teamId, 'A')} (B's news or link)`, method: method!, path: path!, key: a.key,
    body: { title: 'mine' }, status: 404 })),
  { name: "A's key: news for B's group", method: 'POST', path: `${AT}/news`, key: a.key, body: { title: 'x', content: 'x', groupIds: [bGroup.id] }, status: 404 },
  // B's ids in A's log filters find nothing of B's.
  { name: "A's key: A's log filtered by B's owner", method: 'GET', path: `${AT}/logs?targetTeamMemberId=${b.ownerId}`, key: a.key, status: 200 },
];

// Meetings and logoffs: another team's key is 401 either way round; B's ids under A's path are 404; A's lists filtered by B's ids are empty.
const meetingPaths = (base: string) => [
  ['GET', `${base}/meetings`], ['POST', `${base}/meetings`], ['GET', `${base}/meetings/${bMeeting.id}`], ['PATCH', `${base}/meetings/${bMeeting.id}`],
  ['DELETE', `${base}/meetings/${bMeeting.id}`], ...['start', 'end', 'lock', 'cancel'].map((step) => ['POST', `${base}/meetings/${bMeeting.id}/${step}`]),
  ['GET', `${base}/logoffs`], ['POST', `${base}/logoffs`], ['GET', `${base}/logoffs/${bLogoff.id}`], ['DELETE', `${base}/logoffs/${bLogoff.id}`],
];
cases.push(
  ...meetingPaths(AT).map(([method, path]) => ({ name: `B's key: ${method} ${path!.replace(a.teamId, 'A')}`, method: method!, path: path!, key: b.key, body: { title: 'mine' }, status: 401 })),
  ...meetingPaths(BT).map(([method, path]) => ({ name: `A's key: ${method} ${path!.replace(b.teamId, 'B')}`, method: method!, path: path!, key: a.key, body: { title: 'mine' }, status: 401 })),
  ...meetingPaths(AT).filter(([, path]) => path!.includes(bMeeting.id) || path!.includes(bLogoff.id))
    .map(([method, path]) => ({ name: `A's key: ${method} ${path!.replace(a.teamId, 'A')} (B's meeting or logoff)`, method: method!, path: path!, key: a.key, body: { title: 'mine' }, status: 404 })),
  { name: "A's key: a meeting with B's owner", method: 'POST', path: `${AT}/meetings`, key: a.key, body: { title: 'x', dateTime: '2031-01-01T10:00:00Z', teamMemberIds: [b.ownerId] }, status: 404 },
  { name: "A's key: a meeting with B's group", method: 'POST', path: `${AT}/meetings`, key: a.key, body: { title: 'x', dateTime: '2031-01-01T10:00:00Z', groupIds: [bGroup.id] }, status: 404 },
  { name: "A's key: a logoff from B's meeting", method: 'POST', path: `${AT}/logoffs`, key: a.key, body: { message: 'x', meetingId: bMeeting.id }, status: 404 },
  { name: "A's key: A's logoffs filtered by B's ids", method: 'GET', path: `${AT}/logoffs?teamMemberId=${b.ownerId}&meetingId=${bMeeting.id}`, key: a.key, status: 200 },
  { name: "A's key: A's meetings", method: 'GET', path: `${AT}/meetings`, key: a.key, status: 200 },
);

/** A person signed in, a member of `team` in a group with every permission: its session must reach exactly what the team's key reaches. */
async function signedInMember(team: { teamId: string; key: string }, name: string): Promise<string> {
  const signedUp = await server.request('POST', '/v1/auth/sign-up', { body: { email: `${name}@example.com`, username: name, password: 'a long pass phrase' } });
  const group = (await server.admin('POST', `/v1/admin/teams/${team.teamId}/groups`, { name: `${name}-all`, permissions: allPermissions })).body;
  const invite = (await server.media('POST', `/v1/teams/${team.teamId}/invites`, team.key, { body: { groupId: group.id } })).body;
  await server.admin('POST', `/v1/admin/invites/${invite.id}/accept`, { userId: signedUp.body.user.id });
  return signedUp.body.token;
}

// The same cases with the session token of a person in each team (spec 1: a key or a session token on the same routes).
const sessionOf = new Map([[a.key, await signedInMember(a, 'a_person')], [b.key, await signedInMember(b, 'b_person')]]);
const sessionCases = cases.map((testCase) => ({
  ...testCase, name: testCase.name.replace(/^([AB])'s key/, "$1's session"), key: sessionOf.get(testCase.key)!,
}));

// The cases that may write compare B's data with the last snapshot, a group of them at a time: a snapshot is
// 27 reads, more than the rest of a case, and a change to B's data stays until some later case compares, when
// the failure names the group it came in. A GET (safe by HTTP's rules) takes part in none: a change a GET made
// would show in the next comparison, or in the last one after the loop.
const CASES_PER_SNAPSHOT = 8;
const allCases = [...cases, ...sessionCases];
const lastWrite = allCases.findLastIndex((testCase) => testCase.method !== 'GET');
let snapshot = await snapshotOfB();
let sinceSnapshot: string[] = [];
allCases.forEach((testCase, index) => {
  t.test(testCase.name, async (t) => {
    const body = testCase.method === 'GET' ? undefined : testCase.body;
    const response = await server.media(testCase.method, testCase.path, testCase.key, body === undefined ? {} : { body });
    t.equal(response.status, testCase.status);
    if (testCase.status === 200) t.same(response.body, { data: [], count: 0 }, 'nothing of B');
    else t.match(response.body, { name: String, status: testCase.status, messageKey: String }, 'the spec error body');
    const text = JSON.stringify(response.body);
    for (const secret of secrets) t.notOk(text.includes(secret), `no trace of ${secret}`);
    if (testCase.method === 'GET') return;
    sinceSnapshot.push(testCase.name);
    if (sinceSnapshot.length < CASES_PER_SNAPSHOT && index !== lastWrite) return;
    const before = snapshot;
    snapshot = await snapshotOfB();
    t.same(JSON.parse(snapshot), JSON.parse(before), `team B's data is unchanged after ${sinceSnapshot.join('; ')}`);
    sinceSnapshot = [];
  });
});
t.test("after the last case, team B's data is still what it was", async (t) => {
  t.same(JSON.parse(await snapshotOfB()), JSON.parse(snapshot));
});

t.test("bulk actions on B's ids from A's key list them as failed and change nothing", async (t) => {
  for (const body of [
    { action: 'delete', ids: [bPublic.id, bPrivate.id] },
    { action: 'setPublic', ids: [bPrivate.id], public: true },
    { action: 'addTags', ids: [bPublic.id], tags: ['pwned'] },
    { action: 'removeTags', ids: [bPublic.id], tags: ['b-tag'] },
  ]) {
    const before = await snapshotOfB();
    const response = await server.media('POST', `${A}/bulk`, a.key, { body });
    t.equal(response.status, 200, body.action);
    t.equal(response.body.affected, 0);
    t.equal(response.body.failed.length, body.ids.length);
    t.equal(await snapshotOfB(), before, "team B's data is unchanged");
  }
});

t.test("team and to-do files: A's lists never show B's, previews are signed for their own team's path", async (t) => {
  const filtered = await server.media('GET', `${AT}/files?uploadTeamMemberId=${b.ownerId}`, a.key);
  t.equal(filtered.status, 200);
  t.same(filtered.body.data, []);
  t.equal(filtered.body.count, 0);
  const preview = (await server.media('GET', `${BT}/files/${bTeamFile.id}`, b.key)).body.previewUrl as string;
  t.equal((await fetch(preview)).status, 200, "B's preview link works");
  t.equal((await fetch(preview.replace(b.teamId, a.teamId))).status, 403, 'not under A’s path');
  const todoPreview = (await server.media('GET', `${BT}/todos/${bTodo.id}/files/${bTodoFile.id}`, b.key)).body.previewUrl as string;
  t.equal((await fetch(todoPreview.replace(b.teamId, a.teamId))).status, 403);
  t.equal((await fetch(todoPreview.replace('/todo-files/', '/files/'))).status, 403, 'a to-do file link is not a team file link');
});

t.test("files are served only under their own team's path", async (t) => {
  const bPath = new URL(bPublic.publicUrl).pathname;
  t.equal((await fetch(`${server.baseUrl}${bPath}`)).status, 200, 'B’s public file under B’s path');
  t.equal((await fetch(`${server.baseUrl}${bPath.replace(b.teamId, a.teamId)}`)).status, 404, 'not under A’s path');
  const privatePath = `/media/team/${b.teamId}/${bPrivate.path.split('/').pop()}`;
  t.equal((await fetch(`${server.baseUrl}${privatePath}`)).status, 404, 'a private file without a signature is not found');
});

t.test("an upload URL of B's does not work under A's path, nor one of A's under B's", async (t) => {
  const before = await snapshotOfB();
  const bUrl = (await server.media('POST', `/v1/cdn/media/${b.teamId}/upload-urls`, b.key, { body: { fileName: 'b.png' } })).body.url as string;
  const aUrl = (await server.media('POST', `/v1/cdn/media/${a.teamId}/upload-urls`, a.key, { body: { fileName: 'a.png' } })).body.url as string;
  for (const url of [bUrl.replace(`/${b.teamId}/`, `/${a.teamId}/`), aUrl.replace(`/${a.teamId}/`, `/${b.teamId}/`)]) {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'image/png' }, body: pngLike(200) });
    t.equal(response.status, 403, 'the signature names the team');
    t.equal(((await response.json()) as { messageKey: string }).messageKey, 'error.media.uploadUrlInvalid');
  }
  t.same(JSON.parse(await snapshotOfB()), JSON.parse(before), "team B's data is unchanged");
});

t.test("resumable (tus) uploads: B's upload is neither seen, appended to nor terminated through A, and A's key is no key of B's", async (t) => {
  const tusHeaders = { 'tus-resumable': '1.0.0' };
  const created = await server.media('POST', `/v1/cdn/media/${b.teamId}/tus`, b.key, {
    headers: { ...tusHeaders, 'upload-length': '1000', 'upload-metadata': `filename ${Buffer.from('b-secret-upload.png').toString('base64')}` },
  });
  t.equal(created.status, 201);
  const bUpload = created.headers.get('location')!.split('/').pop()!;
  const state = async () => {
    const head = await server.media('HEAD', `/v1/cdn/media/${b.teamId}/tus/${bUpload}`, b.key, { headers: tusHeaders });
    return `${head.status} ${head.headers.get('upload-offset')} ${head.headers.get('upload-metadata')}`;
  };
  const before = await state();
  const patchHeaders = { ...tusHeaders, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' };
  const attempts: [string, string, string, Record<string, string>, number][] = [
    ["A's key, B's id under A's path", 'HEAD', `${A}/tus/${bUpload}`, tusHeaders, 404],
    ["A's key, B's id under A's path", 'PATCH', `${A}/tus/${bUpload}`, patchHeaders, 404],
    ["A's key, B's id under A's path", 'DELETE', `${A}/tus/${bUpload}`, tusHeaders, 404],
    ["A's key on B's path", 'HEAD', `/v1/cdn/media/${b.teamId}/tus/${bUpload}`, tusHeaders, 401],
    ["A's key on B's path", 'PATCH', `/v1/cdn/media/${b.teamId}/tus/${bUpload}`, patchHeaders, 401],
    ["A's key on B's path", 'DELETE', `/v1/cdn/media/${b.teamId}/tus/${bUpload}`, tusHeaders, 401],
    ["A's key on B's path", 'POST', `/v1/cdn/media/${b.teamId}/tus`, { ...tusHeaders, 'upload-length': '10', 'upload-metadata': 'filename eC5wbmc=' }, 401],
  ];
  for (const [who, method, path, headers, status] of attempts) {
    const response = await fetch(`${server.baseUrl}${path}`, {
      method, headers: { authorization: `Bearer ${a.key}`, ...headers }, body: method === 'PATCH' ? 'x' : undefined,
    });
    const text = await response.text();
    t.equal(response.status, status, `${who}: ${method}`);
    if (method !== 'HEAD') t.match(JSON.parse(text), { status, messageKey: String }, 'the spec error body');
    t.notOk(text.includes('b-secret-upload'), 'no trace of the upload');
  }
  t.equal(await state(), before, "B's upload is unchanged");
});

t.test("penalty points, worry box, team tags and accesses: B's key is no key of A (401), B's ids under A's path are not found (404)", async (t) => {
  const T = AT;
  const O = BT;
  const other = b;
  const team = a;
  const otherGroup = bGroup;
  const otherMember = await memberWithKey(server, b.teamId, 'b_worrier', []);
  const alice = await memberWithKey(server, a.teamId, 'a_member', []);
  const inHours = (hours: number) => new Date(Date.now() + hours * 3600_000).toISOString();
  const bTag = (await server.media('POST', `${O}/team-tags`, other.key, { body: { name: 'b-secret-tag' } })).body;
  const bAccess = (await server.media('POST', `${O}/accesses`, other.key, { body: { name: 'b-secret-access' } })).body;
  const bAssignment = (await server.media('POST', `${O}/accesses/${bAccess.id}/assignments`, other.key, { body: { teamMemberId: otherMember.memberId } })).body;
  const bGroupAssignment = (await server.media('POST', `${O}/accesses/${bAccess.id}/group-assignments`, other.key, { body: { groupId: otherGroup.id } })).body;
  const bPoint = (await server.media('POST', `${O}/members/${otherMember.memberId}/penalty-points`, other.key, { body: { message: 'b-secret-point', expiresAt: inHours(1) } })).body;
  const bEntry = (await server.media('POST', `${O}/worry-box`, otherMember.key, { body: { forGroupId: otherGroup.id, message: 'b-secret-worry' } })).body;
  const snapshotOfB = () => Promise.all(['penalty_point', 'worry_box_entry', 'team_tag', 'team_tag_todo', 'team_access', 'team_access_assignment', 'team_access_group_assignment']
    .map((table) => tableSnapshot(server, `select * from ${table} x where ${table === 'team_tag_todo' ? 'tag_id in (select id from team_tag where team_id = $1)' : 'team_id = $1'} order by 1`, [other.teamId])));
  const before = JSON.stringify(await snapshotOfB());
  const aTag = (await server.media('POST', `${T}/team-tags`, team.key, { body: { name: 'a-tag' } })).body;
  const aAccess = (await server.media('POST', `${T}/accesses`, team.key, { body: { name: 'a-access' } })).body;
  const aBoard = (await server.media('POST', `${T}/todo-boards`, team.key, { body: { title: 'a-board' } })).body;
  const aTodo = (await server.media('POST', `${T}/todo-boards/${aBoard.id}/todos`, team.key, { body: { title: 'a-todo' } })).body;

  const bIdsUnderA: [string, string, unknown?][] = [
    ['GET', `${T}/members/${otherMember.memberId}/penalty-points`], ['POST', `${T}/members/${otherMember.memberId}/penalty-points`, { message: 'x', expiresAt: inHours(1) }],
    ['DELETE', `${T}/penalty-points/${bPoint.id}`],
    ['GET', `${T}/worry-box/${bEntry.id}`], ['POST', `${T}/worry-box/${bEntry.id}/answer`, { answer: 'x' }], ['DELETE', `${T}/worry-box/${bEntry.id}`],
    ['GET', `${T}/team-tags/${bTag.id}`], ['PATCH', `${T}/team-tags/${bTag.id}`, { name: 'mine' }], ['DELETE', `${T}/team-tags/${bTag.id}`],
    ['GET', `${T}/team-tags?todoId=${bTodo.id}`], ['POST', `${T}/team-tags`, { name: 'mine-too', todoId: bTodo.id }],
    ['PUT', `${T}/todos/${bTodo.id}/team-tags/${aTag.id}`], ['PUT', `${T}/todos/${aTodo.id}/team-tags/${bTag.id}`],
    ['DELETE', `${T}/todos/${bTodo.id}/team-tags/${aTag.id}`], ['DELETE', `${T}/todos/${aTodo.id}/team-tags/${bTag.id}`],
    ['GET', `${T}/accesses/${bAccess.id}`], ['PATCH', `${T}/accesses/${bAccess.id}`, { name: 'mine' }], ['DELETE', `${T}/accesses/${bAccess.id}`],
    ['POST', `${T}/accesses/${bAccess.id}/assignments`, { teamMemberId: alice.memberId }],
    ['POST', `${T}/accesses/${aAccess.id}/assignments`, { teamMemberId: otherMember.memberId }],
    ['POST', `${T}/accesses/${aAccess.id}/group-assignments`, { groupId: otherGroup.id }],
    ['DELETE', `${T}/accesses/${bAccess.id}/assignments/${bAssignment.id}`], ['DELETE', `${T}/accesses/${aAccess.id}/assignments/${bAssignment.id}`],
    ['DELETE', `${T}/accesses/${bAccess.id}/group-assignments/${bGroupAssignment.id}`], ['DELETE', `${T}/accesses/${aAccess.id}/group-assignments/${bGroupAssignment.id}`],
    ['GET', `${T}/members/${otherMember.memberId}/accesses`],
  ];
  expectError(t, await server.media('POST', `${T}/worry-box`, alice.key, { body: { forGroupId: otherGroup.id, message: 'x' } }), 404, 'error.notFound');
  for (const [method, path, body] of bIdsUnderA) {
    const response = await server.media(method, path, team.key, body === undefined ? {} : { body });
    t.equal(response.status, 404, `${method} ${path.replace(team.teamId, 'A')}`);
    t.notMatch(JSON.stringify(response.body), /b-secret/);
  }
  const aRoutesWithBKey: [string, string][] = [
    ['GET', `${T}/penalty-points`], ['GET', `${T}/members/${alice.memberId}/penalty-points`], ['POST', `${T}/members/${alice.memberId}/penalty-points`],
    ['DELETE', `${T}/penalty-points/${bPoint.id}`], ['POST', `${T}/worry-box`], ['GET', `${T}/worry-box`], ['GET', `${T}/worry-box/mine`],
    ['GET', `${T}/worry-box/${bEntry.id}`], ['POST', `${T}/worry-box/${bEntry.id}/answer`], ['DELETE', `${T}/worry-box/${bEntry.id}`],
    ['GET', `${T}/team-tags`], ['POST', `${T}/team-tags`], ['GET', `${T}/team-tags/${aTag.id}`], ['PATCH', `${T}/team-tags/${aTag.id}`], ['DELETE', `${T}/team-tags/${aTag.id}`],
    ['PUT', `${T}/todos/${aTodo.id}/team-tags/${aTag.id}`], ['DELETE', `${T}/todos/${aTodo.id}/team-tags/${aTag.id}`],
    ['GET', `${T}/accesses`], ['POST', `${T}/accesses`], ['GET', `${T}/accesses/${aAccess.id}`], ['PATCH', `${T}/accesses/${aAccess.id}`], ['DELETE', `${T}/accesses/${aAccess.id}`],
    ['POST', `${T}/accesses/${aAccess.id}/assignments`], ['DELETE', `${T}/accesses/${aAccess.id}/assignments/${bAssignment.id}`],
    ['POST', `${T}/accesses/${aAccess.id}/group-assignments`], ['DELETE', `${T}/accesses/${aAccess.id}/group-assignments/${bGroupAssignment.id}`],
    ['GET', `${T}/members/${alice.memberId}/accesses`],
  ];
  for (const [method, path] of aRoutesWithBKey) {
    for (const key of [other.key, otherMember.key]) {
      const response = await server.media(method, path, key, method === 'GET' || method === 'DELETE' ? {} : { body: { name: 'mine' } });
      t.equal(response.status, 401, `B's key: ${method} ${path.replace(team.teamId, 'A')}`);
    }
  }
  t.equal(JSON.stringify(await snapshotOfB()), before, "team B's data is unchanged");
  t.same((await server.media('GET', `${T}/worry-box`, team.key)).body.entries.filter((entry: any) => entry.id === bEntry.id), [], "A's lists never show B's");
  t.same((await server.media('GET', `${T}/penalty-points?includeExpired=true`, team.key)).body.data.filter((point: any) => point.id === bPoint.id), []);
});

// Every route under a team's path, as the running service has them (a new route is swept without an
// edit here): team A's key and A's session on team B's path, with B's ids where the test made them
// and random ones elsewhere, answer no 2xx and change nothing of B.
t.test("every route under a team's path: A's key and A's session on B's path answer no 2xx and change nothing of B", async (t) => {
  const ids: Record<string, string> = {
    teamId: b.teamId, memberId: b.ownerId, groupId: bGroup.id, mediaId: bPublic.id, folderId: bFolder.id, automationId: bAutomation.id,
    noteId: bNote.id, inviteId: bInvite.id, fileId: bTeamFile.id, boardId: bBoard.id, todoId: bTodo.id, meetingId: bMeeting.id,
    logoffId: bLogoff.id, newsId: bNews.id, linkId: bLink.id,
  };
  // Not OPTIONS: tus' capability discovery answers anyone (its protocol's settings, nothing of a team).
  const teamRoutes = server.app.routes.filter((route) => route.pattern.includes(':teamId') && route.method !== 'OPTIONS');
  const before = await snapshotOfB();
  const answered: string[] = [];
  for (const route of teamRoutes) {
    const path = route.pattern.replace(/:([a-zA-Z]+)/g, (_, name: string) => ids[name] ?? randomUUID());
    for (const [who, credential] of [['key', a.key], ['session', sessionOf.get(a.key)!]] as const) {
      const response = await server.media(route.method, path, credential, ['GET', 'HEAD'].includes(route.method) ? {} : { body: {} });
      if (response.status < 300) answered.push(`${route.method} ${route.pattern} (A's ${who}): ${response.status}`);
      const text = JSON.stringify(response.body ?? '');
      for (const secret of secrets) if (text.includes(secret)) answered.push(`${route.method} ${route.pattern} (A's ${who}) shows ${secret}`);
    }
  }
  t.ok(teamRoutes.length > 150, `${teamRoutes.length} routes swept`);
  t.same(answered, [], 'none answers 2xx or shows anything of B');
  t.same(JSON.parse(await snapshotOfB()), JSON.parse(before), "team B's data is unchanged");
});
