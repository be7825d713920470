import t from 'tap';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { uploadJson, uploadMultipart } from '../helpers/uploads.ts';

const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(100, 7)]);

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const teamA = await server.createTeam('Alpha', 'enterprise');
const teamB = await server.createTeam('Bravo');
const base = `/v1/cdn/media/${teamA.teamId}`;

async function upload(team: typeof teamA, tags: string) {
  const response = await uploadMultipart(server, team.teamId, team.key, { content: PNG, fileName: 'a.png', contentType: 'image/png' }, tags ? `tags=${tags}` : '');
  if (response.status !== 201) throw new Error(`upload failed: ${JSON.stringify(response.body)}`);
}

await upload(teamA, 'server:eu-1,map:1');
await upload(teamA, 'server:eu-1,map:1,event:cup');
await upload(teamA, 'server:eu-1,map:10');
await upload(teamA, 'remap:1,docs_1');
await upload(teamA, '');
const jsonUpload = await uploadJson(server, teamA.teamId, teamA.key, { file: PNG.toString('base64'), fileName: 'j.png', tags: ['server:eu-1'] });
if (jsonUpload.status !== 201) throw new Error('JSON upload failed');
await upload(teamB, 'secret:bravo,server:eu-1');
const uploadsA = 6;

t.test('tags: most used first with counts, only the team\'s own', async (t) => {
  const response = await server.media('GET', `${base}/tags`, teamA.key);
  t.equal(response.status, 200);
  t.same(response.body, {
    tags: [
      { tag: 'server:eu-1', count: 4 },
      { tag: 'map:1', count: 2 },
      { tag: 'docs_1', count: 1 },
      { tag: 'event:cup', count: 1 },
      { tag: 'map:10', count: 1 },
      { tag: 'remap:1', count: 1 },
    ],
  });
  t.notOk(JSON.stringify(response.body).includes('secret:bravo'));
});

t.test('tags: search is a case-insensitive substring, prefix matches first', async (t) => {
  const search = async (text: string) => (await server.media('GET', `${base}/tags?search=${encodeURIComponent(text)}`, teamA.key)).body.tags;
  t.same(await search('map:1'), [
    { tag: 'map:1', count: 2 },
    { tag: 'map:10', count: 1 },
    { tag: 'remap:1', count: 1 },
  ]);
  t.same(await search(' MAP:1 '), await search('map:1'), 'trimmed and lower-cased');
  t.same(await search('eu'), [{ tag: 'server:eu-1', count: 4 }]);
  t.same(await search('%'), [], '% is literal');
  t.same(await search('_'), [{ tag: 'docs_1', count: 1 }], '_ is literal');
  t.same(await search('s_'), [{ tag: 'docs_1', count: 1 }]);
  t.same(await search('s1'), [], '_ is not a wildcard');
  t.same(await search('secret'), [], 'never another team\'s tags');
  t.same(await search(''), (await server.media('GET', `${base}/tags`, teamA.key)).body.tags, 'empty search lists all');
});

t.test('tags: limit default 20, at most 100', async (t) => {
  const team = await server.createTeam('Many', 'enterprise');
  const tagsOf = (prefix: string, count: number) => Array.from({ length: count }, (_, index) => `${prefix}${String(index).padStart(2, '0')}`);
  for (const tags of [tagsOf('a', 20), tagsOf('b', 20), tagsOf('a', 5)]) {
    const response = await uploadMultipart(server, team.teamId, team.key, { content: PNG, fileName: 'm.png' }, `tags=${tags.join(',')}`);
    t.equal(response.status, 201);
  }
  const path = `/v1/cdn/media/${team.teamId}/tags`;
  const byDefault = (await server.media('GET', path, team.key)).body.tags;
  t.equal(byDefault.length, 20);
  t.same(byDefault.slice(0, 5), tagsOf('a', 5).map((tag) => ({ tag, count: 2 })), 'most used first, then by name');
  t.equal((await server.media('GET', `${path}?limit=100`, team.key)).body.tags.length, 40);
  t.same((await server.media('GET', `${path}?limit=1`, team.key)).body.tags, [{ tag: 'a00', count: 2 }]);
  for (const limit of ['0', '101', 'abc', '1.5', '-1']) {
    expectError(t, await server.media('GET', `${path}?limit=${limit}`, team.key), 400, 'error.badRequest');
  }
  expectError(t, await server.media('GET', `${path}?search=${'x'.repeat(65)}`, team.key), 400, 'error.badRequest');
});

function utcDay(offsetDays: number): string {
  return new Date(Date.now() - offsetDays * 86_400_000).toISOString().slice(0, 10);
}

/** The default 30-day window, oldest first. */
function dates0(): string[] {
  return Array.from({ length: 30 }, (_, index) => utcDay(29 - index));
}

t.test('usage: storage, limits and one entry per day, zeros included', async (t) => {
  const db = await connectPg(server.databaseUrl);
  try {
    await db.query(`insert into media_usage_daily (team_id, day, uploads, upload_bytes, api_uploads) values ($1, $2, 7, 7000, 5), ($1, $3, 9, 9000, 9)`, [
      teamA.teamId,
      utcDay(5),
      utcDay(40),
    ]);
  } finally {
    await db.end();
  }
  const response = await server.media('GET', `${base}/usage`, teamA.key);
  t.equal(response.status, 200);
  const body = response.body;
  t.equal(body.days, 30, 'default window');
  t.equal(body.uploads.length, 30);
  t.equal(body.uploads[0].date, utcDay(29), 'oldest first');
  t.same(body.uploads[29], { date: utcDay(0), uploads: uploadsA, bytes: uploadsA * PNG.length, apiUploads: uploadsA });
  t.same(body.uploads[24], { date: utcDay(5), uploads: 7, bytes: 7000, apiUploads: 5 });
  t.same(body.uploads[10], { date: utcDay(19), uploads: 0, bytes: 0, apiUploads: 0 }, 'empty days are zeros');
  t.same(body.served, dates0().map((date) => ({ date, requests: 0, bytes: 0 })), 'served: one entry per day, zeros without traffic');
  const dates = body.uploads.map((entry: { date: string }) => entry.date);
  t.same(dates, Array.from({ length: 30 }, (_, index) => utcDay(29 - index)), 'consecutive days');
  t.same(body.storage, {
    usedBytes: uploadsA * PNG.length,
    limitBytes: body.limits.maxTeamStorage * 1024,
    mediaBytes: uploadsA * PNG.length,
    teamFileBytes: 0,
    todoFileBytes: 0,
    maxFileSizeBytes: 250_000_000,
  });
  t.equal(body.limits.maxMediaFileSize, 250_000_000);
  t.type(body.limits.maxMembers, 'number');

  const ninety = (await server.media('GET', `${base}/usage?days=90`, teamA.key)).body;
  t.equal(ninety.uploads.length, 90);
  t.same(ninety.uploads[49], { date: utcDay(40), uploads: 9, bytes: 9000, apiUploads: 9 });
  const one = (await server.media('GET', `${base}/usage?days=1`, teamA.key)).body;
  t.same(one.uploads, [{ date: utcDay(0), uploads: uploadsA, bytes: uploadsA * PNG.length, apiUploads: uploadsA }]);
});

t.test('usage: null limits mean unlimited', async (t) => {
  const patched = await server.admin('PATCH', `/v1/admin/teams/${teamA.teamId}/limits`, { maxTeamStorage: null, maxMediaFileSize: null });
  t.equal(patched.status, 200);
  const body = (await server.media('GET', `${base}/usage?days=3`, teamA.key)).body;
  t.equal(body.storage.limitBytes, null);
  t.equal(body.storage.maxFileSizeBytes, null);
  t.equal(body.limits.maxTeamStorage, null);
  t.equal(body.uploads.length, 3);
});

t.test('usage: days must be a whole number from 1 to 90', async (t) => {
  for (const days of ['0', '91', '1.5', 'abc', '-1', '30d', '1e1']) {
    expectError(t, await server.media('GET', `${base}/usage?days=${days}`, teamA.key), 400, 'error.badRequest');
  }
});

t.test('team B\'s key on team A is 401; a member without view is 403', async (t) => {
  for (const path of [`${base}/tags`, `${base}/tags?search=secret`, `${base}/usage`, `${base}/usage?days=90`]) {
    const response = await server.media('GET', path, teamB.key);
    expectError(t, response, 401, 'error.unauthorized');
    t.notOk(JSON.stringify(response.body).includes('server:eu-1'));
  }
  const member = await server.admin('POST', `/v1/admin/teams/${teamA.teamId}/members`, { name: 'uploader', permissions: ['team.media.upload'] });
  const key = await server.admin('POST', `/v1/admin/teams/${teamA.teamId}/api-keys`, { teamMemberId: member.body.id });
  expectError(t, await server.media('GET', `${base}/tags`, key.body.key), 403, 'error.forbidden');
  expectError(t, await server.media('GET', `${base}/usage`, key.body.key), 403, 'error.forbidden');
});
