import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { memberWithKey, tableSnapshot, teamLogRows } from '../helpers/team-admin.ts';

// News (drafts, publish, group targeting, maxNews), the news banner and links (maxLinks, destination
// checks), on two instances sharing one database: the limits hold exactly when both publish or create at once.
const settings = { RATE_LIMIT_POINTS: 100_000 };
const first = await startTestServer(t, { settings });
const second = await startTestServer(t, { settings, databaseUrl: first.databaseUrl });
const server = first;

const team = await server.createTeam('Newsroom');
const other = await server.createTeam('Elsewhere');
const T = `/v1/teams/${team.teamId}`;
const O = `/v1/teams/${other.teamId}`;
const groupOf = async (teamId: string, name: string) => (await server.admin('POST', `/v1/admin/teams/${teamId}/groups`, { name, permissions: [] })).body;
const staff = await groupOf(team.teamId, 'Staff');
const support = await groupOf(team.teamId, 'Support');
const otherGroup = await groupOf(other.teamId, 'Theirs');
const editor = await memberWithKey(server, team.teamId, 'editor', ['team.news.manage', 'team.links.manage']);
const reader = await memberWithKey(server, team.teamId, 'reader', [], { groupIds: [staff.id] });
const newsRows = (teamId: string) => tableSnapshot(server, 'select id, is_draft, title from news where team_id = $1 order by id', [teamId]);
const linkRows = (teamId: string) => tableSnapshot(server, 'select * from team_link where team_id = $1 order by id', [teamId]);

t.test('news: a draft by default, seen only by editors; publish and unpublish with 409 for the wrong state', async (t) => {
  const created = await server.media('POST', `${T}/news`, editor.key, { body: { title: '  Server restart ', content: 'Tonight at 22:00' } });
  t.equal(created.status, 201);
  t.match(created.body, {
    teamId: team.teamId, title: 'Server restart', content: 'Tonight at 22:00', isDraft: true, isImportant: false, showOnDashboard: false,
    publishedAt: null, groups: [], creatorId: editor.memberId, creator: { id: editor.memberId, name: 'editor' },
  });
  const id = created.body.id;
  expectError(t, await server.media('GET', `${T}/news/${id}`, reader.key), 404, 'error.notFound');
  t.same((await server.media('GET', `${T}/news`, reader.key)).body, { data: [], count: 0 }, 'a reader sees no draft');
  t.same((await server.media('GET', `${T}/news?isDraft=true`, reader.key)).body, { data: [], count: 0 }, 'not even when asking for drafts');
  t.equal((await server.media('GET', `${T}/news?isDraft=true`, editor.key)).body.count, 1, 'the editor does');

  const published = await server.media('POST', `${T}/news/${id}/publish`, editor.key);
  t.equal(published.status, 200);
  t.equal(published.body.isDraft, false);
  t.ok(published.body.publishedAt);
  expectError(t, await server.media('POST', `${T}/news/${id}/publish`, editor.key), 409, 'error.conflict');
  t.equal((await server.media('GET', `${T}/news/${id}`, reader.key)).body.title, 'Server restart', 'published: the reader sees it');

  const unpublished = await server.media('POST', `${T}/news/${id}/unpublish`, editor.key);
  t.equal(unpublished.status, 200);
  t.equal(unpublished.body.isDraft, true);
  t.equal(unpublished.body.publishedAt, null);
  expectError(t, await server.media('POST', `${T}/news/${id}/unpublish`, editor.key), 409, 'error.conflict');
  expectError(t, await server.media('POST', `${T}/news/${id}/publish`, reader.key), 403, 'error.forbidden');
  t.equal((await server.media('DELETE', `${T}/news/${id}`, editor.key)).status, 204);
  expectError(t, await server.media('GET', `${T}/news/${id}`, editor.key), 404, 'error.notFound');
  t.notOk((await teamLogRows(server, team.teamId)).some((row) => row.target_identifier === id), 'the spec has no LogAction for news: nothing logged');
});

t.test('news: group targeting, filters and the info shape', async (t) => {
  const make = async (body: Record<string, unknown>) => (await server.media('POST', `${T}/news`, editor.key, { body: { content: 'x', isDraft: false, ...body } })).body;
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxNews: 10 });
  const everyone = await make({ title: 'For everyone', isImportant: true });
  const forStaff = await make({ title: 'For staff', groupIds: [staff.id, support.id], showOnDashboard: true });
  const forSupport = await make({ title: 'For support', groupIds: [support.id] });
  t.same(forStaff.groups.map((group: any) => group.name).sort(), ['Staff', 'Support'], 'Info adds groups');
  t.match(forStaff.groups[0], { id: String, teamId: team.teamId, name: String, color: String, sort: Number, permissions: Array });

  const seen = (await server.media('GET', `${T}/news`, reader.key)).body;
  t.same(seen.data.map((news: any) => news.title).sort(), ['For everyone', 'For staff'], 'the reader sees untargeted news and its group\'s');
  t.equal(seen.count, 2);
  expectError(t, await server.media('GET', `${T}/news/${forSupport.id}`, reader.key), 404, 'error.notFound');
  t.equal((await server.media('GET', `${T}/news`, editor.key)).body.count, 3, 'the editor sees every target');
  t.same((await server.media('GET', `${T}/news?isImportant=true`, reader.key)).body.data.map((news: any) => news.id), [everyone.id]);
  t.same((await server.media('GET', `${T}/news?showOnDashboard=true`, reader.key)).body.data.map((news: any) => news.id), [forStaff.id]);
  t.equal((await server.media('GET', `${T}/news`, editor.key, { headers: { pageSize: '2' } })).body.data.length, 2, 'paged');

  const retargeted = await server.media('PATCH', `${T}/news/${forSupport.id}`, editor.key, { body: { groupIds: [staff.id], title: 'Now for staff' } });
  t.equal(retargeted.status, 200);
  t.same(retargeted.body.groups.map((group: any) => group.id), [staff.id]);
  t.equal((await server.media('GET', `${T}/news/${forSupport.id}`, reader.key)).body.title, 'Now for staff');
  for (const news of [everyone, forStaff, forSupport]) await server.media('DELETE', `${T}/news/${news.id}`, editor.key);
});

t.test('news: bad input is 400 and stores nothing; another team\'s ids are 404; no permission is 403', async (t) => {
  const before = await newsRows(team.teamId);
  const bad: [unknown, string][] = [
    [{ content: 'no title' }, 'error.missingArgument.title'],
    [{ title: 'x', content: '   ' }, 'error.badRequest'],
    [{ title: 'x'.repeat(201), content: 'x' }, 'error.badRequest'],
    [{ title: 'x', content: 'x', isDraft: 'no' }, 'error.badRequest'],
    [{ title: 'x', content: 'x', groupIds: ['not-a-uuid'] }, 'error.badRequest'],
    [{ title: 'x', content: 'x', groupIds: [staff.id, staff.id] }, 'error.badRequest'],
    [{ title: 'x', content: 'x', creatorId: editor.memberId }, 'error.badRequest'],
    [[], 'error.badRequest'],
  ];
  for (const [body, messageKey] of bad) expectError(t, await server.media('POST', `${T}/news`, editor.key, { body }), 400, messageKey);
  expectError(t, await server.media('POST', `${T}/news`, editor.key, { body: { title: 'x', content: 'x', groupIds: [otherGroup.id] } }), 404, 'error.notFound');
  expectError(t, await server.media('POST', `${T}/news`, reader.key, { body: { title: 'x', content: 'x' } }), 403, 'error.forbidden');
  t.equal(await newsRows(team.teamId), before, 'nothing stored');

  const theirs = (await server.media('POST', `${O}/news`, other.key, { body: { title: 'Theirs', content: 'secret' } })).body;
  const mine = (await server.media('POST', `${T}/news`, editor.key, { body: { title: 'Mine', content: 'x' } })).body;
  const theirsBefore = await newsRows(other.teamId);
  for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/publish'], ['POST', '/unpublish']] as const) {
    const response = await server.media(method, `${T}/news/${theirs.id}${path}`, team.key, method === 'PATCH' ? { body: { title: 'stolen' } } : {});
    expectError(t, response, 404, 'error.notFound');
  }
  expectError(t, await server.media('PATCH', `${T}/news/${mine.id}`, editor.key, { body: { groupIds: [otherGroup.id] } }), 404, 'error.notFound');
  expectError(t, await server.media('PATCH', `${T}/news/${mine.id}`, editor.key, { body: { content: '' } }), 400, 'error.badRequest');
  t.equal(await newsRows(other.teamId), theirsBefore, 'the other team\'s news is unchanged');
  t.equal((await server.media('GET', `${T}/news/${mine.id}`, editor.key)).body.content, 'x');
  await server.media('DELETE', `${T}/news/${mine.id}`, editor.key);
});

t.test('maxNews counts published news: 402 past it, drafts are free, unpublishing frees a place', async (t) => {
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxNews: 2 });
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await server.media('POST', `${T}/news`, editor.key, { body: { title: `Draft ${i}`, content: 'x' } })).body.id);
  t.equal((await server.media('POST', `${T}/news/${ids[0]}/publish`, editor.key)).status, 200);
  t.equal((await server.media('POST', `${T}/news`, editor.key, { body: { title: 'At once', content: 'x', isDraft: false } })).status, 201);
  const over = await server.media('POST', `${T}/news/${ids[1]}/publish`, editor.key);
  expectError(t, over, 402, 'error.teamLimits.maxNews');
  t.equal(over.body.value, 2);
  const before = await newsRows(team.teamId);
  expectError(t, await server.media('POST', `${T}/news`, editor.key, { body: { title: 'At once too', content: 'x', isDraft: false } }), 402, 'error.teamLimits.maxNews');
  t.equal(await newsRows(team.teamId), before, 'nothing stored, nothing published');
  t.equal((await server.media('POST', `${T}/news`, editor.key, { body: { title: 'Another draft', content: 'x' } })).status, 201, 'drafts are not counted');
  t.equal((await server.media('POST', `${T}/news/${ids[0]}/unpublish`, editor.key)).status, 200);
  t.equal((await server.media('POST', `${T}/news/${ids[1]}/publish`, editor.key)).status, 200, 'the freed place is taken');
  const all = (await server.media('GET', `${T}/news`, editor.key)).body.data;
  for (const news of all) await server.media('DELETE', `${T}/news/${news.id}`, editor.key);
});

t.test('two instances: concurrent publishes never pass maxNews, and one draft is published once', async (t) => {
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxNews: 3 });
  const ids: string[] = [];
  for (let i = 0; i < 8; i++) ids.push((await server.media('POST', `${T}/news`, editor.key, { body: { title: `Race ${i}`, content: 'x' } })).body.id);
  const answers = await Promise.all(ids.map((id, i) => (i % 2 ? second : first).media('POST', `${T}/news/${id}/publish`, editor.key)));
  t.same(answers.map((answer) => answer.status).sort(), [200, 200, 200, 402, 402, 402, 402, 402]);
  t.equal((await server.media('GET', `${T}/news?isDraft=false`, editor.key)).body.count, 3, 'exactly maxNews published');

  const draft = answers.findIndex((answer) => answer.status === 402);
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxNews: 10 });
  const twice = await Promise.all([first, second].map((instance) => instance.media('POST', `${T}/news/${ids[draft]}/publish`, editor.key)));
  t.same(twice.map((answer) => answer.status).sort(), [200, 409], 'one publish wins, the other finds it published');
  // 4 published now; room for 2 more, asked for by 6 publishing creations at once.
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxNews: 6 });
  const direct = await Promise.all(Array.from({ length: 6 }, (_, i) =>
    (i % 2 ? second : first).media('POST', `${T}/news`, editor.key, { body: { title: `Direct ${i}`, content: 'x', isDraft: false } })));
  t.same(direct.map((answer) => answer.status).sort(), [201, 201, 402, 402, 402, 402]);
  t.equal((await server.media('GET', `${T}/news?isDraft=false`, editor.key)).body.count, 6);
  t.equal((await server.media('GET', `${T}/news`, editor.key)).body.count, 8 + 2, 'the refused ones stored nothing');
  for (const news of (await server.media('GET', `${T}/news`, editor.key)).body.data) await server.media('DELETE', `${T}/news/${news.id}`, editor.key);
});

t.test('the news banner: the owner or the operator sets it, every member reads it', async (t) => {
  t.equal((await server.media('GET', `${T}/news-banner`, reader.key)).status, 204, 'none yet');
  const banner = { title: 'Maintenance', type: 'WARNING', messageType: 'TEXT', description: 'Saturday', language: 'de-DE', button: { text: 'Status', url: 'https://status.example.com/#now' } };
  const set = await server.media('PUT', `${T}/news-banner`, team.key, { body: banner });
  t.equal(set.status, 200);
  t.same(set.body, banner);
  t.same((await server.media('GET', `${T}/news-banner`, reader.key)).body, banner, 'every member reads it');
  const allPermissions = await memberWithKey(server, team.teamId, 'deputy', ['team.news.manage', 'team.settings.manage']);
  expectError(t, await server.media('PUT', `${T}/news-banner`, allPermissions.key, { body: banner }), 403, 'error.forbidden');
  expectError(t, await server.media('DELETE', `${T}/news-banner`, allPermissions.key), 403, 'error.forbidden');

  const bad: [unknown, string | undefined][] = [
    [{ ...banner, type: 'DANGER' }, 'type'],
    [{ ...banner, messageType: 'HTML' }, 'messageType'],
    [{ ...banner, button: { text: 'x', url: 'javascript:alert(1)' } }, 'button.url'],
    [{ ...banner, button: { text: 'x', url: 'data:text/html,hi' } }, 'button.url'],
    [{ ...banner, button: { text: 'x', url: '/relative' } }, 'button.url'],
    [{ ...banner, language: 'not a language' }, 'language'],
  ];
  for (const [body, value] of bad) {
    const response = await server.media('PUT', `${T}/news-banner`, team.key, { body });
    expectError(t, response, 400, 'error.badRequest');
    t.equal(response.body.value, value);
  }
  t.same((await server.media('GET', `${T}/news-banner`, reader.key)).body, banner, 'unchanged');

  const byOperator = await server.admin('PUT', `/v1/admin/teams/${team.teamId}/news-banner`, { title: 'banner.key', type: 'ERROR', messageType: 'KEY' });
  t.same(byOperator.body, { title: 'banner.key', type: 'ERROR', messageType: 'KEY', description: null, language: null, button: null });
  expectError(t, await server.admin('PUT', `/v1/admin/teams/00000000-0000-4000-8000-000000000000/news-banner`, banner), 404, 'error.notFound');
  t.equal((await server.admin('DELETE', `/v1/admin/teams/${team.teamId}/news-banner`)).status, 204);
  t.equal((await server.media('GET', `${T}/news-banner`, reader.key)).status, 204);
  t.equal((await server.media('PUT', `${T}/news-banner`, team.key, { body: banner })).status, 200);
  t.equal((await server.media('DELETE', `${T}/news-banner`, team.key)).status, 204, 'the owner removes it');
  t.equal((await server.media('GET', `${O}/news-banner`, other.key)).status, 204, 'the other team never had one');
});

t.test('links: CRUD, REDIRECT by default, destinations checked as automation targets', async (t) => {
  const created = await server.media('POST', `${T}/links`, editor.key, { body: { title: 'Wiki', destination: 'https://wiki.example.com/start#top', icon: 'book' } });
  t.equal(created.status, 201);
  t.match(created.body, { teamId: team.teamId, title: 'Wiki', destination: 'https://wiki.example.com/start#top', type: 'REDIRECT', icon: 'book' });
  const id = created.body.id;
  t.same((await server.media('GET', `${T}/links`, reader.key)).body.map((link: any) => link.id), [id], 'every member reads them');
  t.equal((await server.media('GET', `${T}/links/${id}`, reader.key)).body.title, 'Wiki');
  expectError(t, await server.media('POST', `${T}/links`, reader.key, { body: { title: 'x', destination: 'https://x.example' } }), 403, 'error.forbidden');

  const before = await linkRows(team.teamId);
  const bad: [unknown, string][] = [
    [{ title: 'x', destination: 'javascript:alert(1)' }, 'destination'],
    [{ title: 'x', destination: 'data:text/html,<script>1</script>' }, 'destination'],
    [{ title: 'x', destination: 'ftp://files.example.com' }, 'destination'],
    [{ title: 'x', destination: 'https://user:pass@example.com' }, 'destination'],
    [{ title: 'x', destination: 'http://127.0.0.1:8080/admin', type: 'FRAME' }, 'destination'],
    [{ title: 'x', destination: 'http://169.254.169.254/latest', type: 'FRAME' }, 'destination'],
    [{ title: 'x', destination: 'http://[::1]/', type: 'FRAME' }, 'destination'],
    [{ title: 'x', destination: 'http://localhost/', type: 'FRAME' }, 'destination'],
    [{ title: 'x', destination: 'https://x.example', type: 'POPUP' }, 'type'],
    [{ title: '', destination: 'https://x.example' }, 'title'],
    [{ title: 'x', destination: 'https://x.example', icon: 'i'.repeat(65) }, 'icon'],
  ];
  for (const [body, value] of bad) {
    const response = await server.media('POST', `${T}/links`, editor.key, { body });
    expectError(t, response, 400, 'error.badRequest');
    t.equal(response.body.value, value, JSON.stringify(body));
  }
  expectError(t, await server.media('POST', `${T}/links`, editor.key, { body: { title: 'x' } }), 400, 'error.missingArgument.destination');
  t.equal(await linkRows(team.teamId), before, 'nothing stored');

  const intranet = await server.media('POST', `${T}/links`, editor.key, { body: { title: 'Intranet', destination: 'http://10.0.0.5/panel', type: 'REDIRECT_BLANK' } });
  t.equal(intranet.status, 201, 'a redirect may point into a private network: a browser opens it');
  const asFrame = await server.media('PATCH', `${T}/links/${intranet.body.id}`, editor.key, { body: { type: 'FRAME' } });
  expectError(t, asFrame, 400, 'error.badRequest');
  t.equal(asFrame.body.value, 'destination', 'turned into a frame, its old destination is checked as a frame\'s');
  const framed = await server.media('PATCH', `${T}/links/${intranet.body.id}`, editor.key, { body: { type: 'FRAME', destination: 'https://panel.example.com', icon: null } });
  t.match(framed.body, { type: 'FRAME', destination: 'https://panel.example.com/', icon: null, title: 'Intranet' });

  const limit = await server.media('POST', `${T}/links`, editor.key, { body: { title: 'Third', destination: 'https://x.example' } });
  expectError(t, limit, 402, 'error.teamLimits.maxLinks');
  t.equal(limit.body.value, 2, 'the plan default');

  const theirs = (await server.media('POST', `${O}/links`, other.key, { body: { title: 'Theirs', destination: 'https://secret.example' } })).body;
  const theirsBefore = await linkRows(other.teamId);
  for (const method of ['GET', 'PATCH', 'DELETE']) {
    expectError(t, await server.media(method, `${T}/links/${theirs.id}`, editor.key, method === 'PATCH' ? { body: { title: 'stolen' } } : {}), 404, 'error.notFound');
  }
  t.equal(await linkRows(other.teamId), theirsBefore);
  t.equal((await server.media('DELETE', `${T}/links/${id}`, editor.key)).status, 204);
  t.equal((await server.media('DELETE', `${T}/links/${intranet.body.id}`, editor.key)).status, 204);
  expectError(t, await server.media('GET', `${T}/links/${id}`, editor.key), 404, 'error.notFound');
});

t.test('two instances: concurrent link creations never pass maxLinks', async (t) => {
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxLinks: 3 });
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) =>
    (i % 2 ? second : first).media('POST', `${T}/links`, editor.key, { body: { title: `Link ${i}`, destination: `https://l${i}.example.com` } })));
  t.same(answers.map((answer) => answer.status).sort(), [201, 201, 201, 402, 402, 402, 402, 402]);
  t.equal((await second.media('GET', `${T}/links`, reader.key)).body.length, 3);
});

t.test('an archived team reads its news, banner and links but changes none of them', async (t) => {
  const news = (await server.media('POST', `${T}/news`, editor.key, { body: { title: 'Before', content: 'x' } })).body;
  t.equal((await server.media('POST', `${T}/archive`, team.key)).status, 200);
  const before = [await newsRows(team.teamId), await linkRows(team.teamId)];
  for (const [method, path, body] of [
    ['POST', '/news', { title: 'x', content: 'x' }], ['PATCH', `/news/${news.id}`, { title: 'x' }], ['POST', `/news/${news.id}/publish`, undefined],
    ['DELETE', `/news/${news.id}`, undefined], ['PUT', '/news-banner', { title: 'x', type: 'INFO', messageType: 'TEXT' }], ['DELETE', '/news-banner', undefined],
    ['POST', '/links', { title: 'x', destination: 'https://x.example' }],
  ] as const) {
    expectError(t, await server.media(method, `${T}${path}`, team.key, body ? { body } : {}), 403, 'error.team.archived');
  }
  t.equal((await server.media('GET', `${T}/news`, editor.key)).status, 200);
  t.equal((await server.media('GET', `${T}/links`, editor.key)).status, 200);
  t.same([await newsRows(team.teamId), await linkRows(team.teamId)], before, 'nothing changed');
  t.equal((await server.admin('PUT', `/v1/admin/teams/${team.teamId}/news-banner`, { title: 'Archived', type: 'INFO', messageType: 'TEXT' })).status, 200, 'the operator still can');
  t.equal((await server.media('POST', `${T}/unarchive`, team.key)).status, 200);
});
