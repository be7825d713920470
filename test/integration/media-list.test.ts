import t, { type Test } from 'tap';
import { connectPg } from '../helpers/database.ts';
import { expectError, startTestServer, type ApiResponse } from '../helpers/server.ts';
import { uploadMultipart } from '../helpers/uploads.ts';

const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(32, 1)]);
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(32)]);
const OGG = Buffer.concat([Buffer.from('OggS\0'), Buffer.alloc(40, 2)]);
const PDF = Buffer.from('%PDF-1.4\n% test document\n');
const TEXT = Buffer.from('plain notes about the match\n');
const BIN = Buffer.from([0x00, 0x9f, 0x13, 0x37, 0xfe, 0x01, 0x02, 0x03, 0x04]);

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const teamA = await server.createTeam('Alpha', 'enterprise');
const teamB = await server.createTeam('Bravo', 'enterprise');
const base = `/v1/cdn/media/${teamA.teamId}`;

async function upload(team: typeof teamA, content: Buffer, fileName: string, contentType: string, query = '') {
  const response = await uploadMultipart(server, team.teamId, team.key, { content, fileName, contentType }, query);
  if (response.status !== 201) throw new Error(`upload ${fileName} failed: ${JSON.stringify(response.body)}`);
  return response.body as { id: string; folderId: string | null; fileName: string };
}

// Uploaded one after another, so created_at grows in this order.
const f1 = await upload(teamA, PNG, 'shot-1.png', 'image/png', 'tags=server:eu-1,map:1&folder=shots');
const f2 = await upload(teamA, PNG, 'shot-2.png', 'image/png', 'tags=server:us-2,map:1&folder=shots/2024');
const f3 = await upload(teamA, MP4, 'intro.mp4', 'video/mp4', 'tags=server:eu-1&folder=videos');
const f4 = await upload(teamA, OGG, 'theme.ogg', 'audio/ogg', 'tags=music');
const f5 = await upload(teamA, PDF, 'manual.pdf', 'application/pdf', 'tags=docs,server:eu-1');
const f6 = await upload(teamA, TEXT, 'notes_100%.txt', 'text/plain', 'tags=docs&folder=shots');
const f7 = await upload(teamA, BIN, 'blob.bin', 'application/octet-stream');
const f8 = await upload(teamA, PNG, 'SHOT-upper.PNG', 'image/png', 'tags=server:eu-1,map:1&folder=shots/2024/deep');
const all = [f1, f2, f3, f4, f5, f6, f7, f8];
const newestFirst = [...all].reverse().map((file) => file.id);
const shots = f1.folderId!;
const videos = f3.folderId!;
const bFile = await upload(teamB, PNG, 'shot-b.png', 'image/png', 'tags=server:eu-1,map:1&folder=shots');
const bFolder = bFile.folderId!;

function list(query = '', headers: Record<string, string> = {}, key = teamA.key): Promise<ApiResponse> {
  return server.media('GET', `${base}${query ? `?${query}` : ''}`, key, { headers });
}

/** Ids in answer order; asserts 200 and that totalCount matches when the page holds everything. */
async function ids(t: Test, query: string): Promise<string[]> {
  const response = await list(query);
  t.equal(response.status, 200, `200 for ?${query}`);
  t.equal(response.body.totalCount, response.body.media.length, `totalCount for ?${query}`);
  return response.body.media.map((record: { id: string }) => record.id);
}
const idsOf = (...files: { id: string }[]) => files.map((file) => file.id).reverse();

t.test('no filter: every file of the team, newest first, full records', async (t) => {
  const response = await list();
  t.equal(response.status, 200);
  t.same(response.body.media.map((record: { id: string }) => record.id), newestFirst);
  t.equal(response.body.totalCount, 8);
  const sizes = [PNG, PNG, MP4, OGG, PDF, TEXT, BIN, PNG].reduce((sum, content) => sum + content.length, 0);
  t.equal(response.body.usedTeamStorage, sizes);
  t.match(response.body.media[0], {
    id: f8.id,
    path: new RegExp(`^media/team/${teamA.teamId}/`),
    publicUrl: String,
    public: true,
    folderId: f8.folderId,
    tags: ['server:eu-1', 'map:1'],
    fileName: 'SHOT-upper.PNG',
    size: PNG.length,
    contentType: 'image/png',
    hash: String,
    createdAt: String,
    updatedAt: String,
  });
  t.notOk(JSON.stringify(response.body).includes(bFile.id), 'never another team\'s file');
});

t.test('folderId, none and includeSubfolders', async (t) => {
  t.same(await ids(t, `folderId=${shots}`), idsOf(f1, f6));
  t.same(await ids(t, `folderId=${shots}&includeSubfolders=false`), idsOf(f1, f6));
  t.same(await ids(t, `folderId=${shots}&includeSubfolders=true`), idsOf(f1, f2, f6, f8));
  t.same(await ids(t, `folderId=${f2.folderId}&includeSubfolders=true`), idsOf(f2, f8));
  t.same(await ids(t, `folderId=${videos}&includeSubfolders=true`), idsOf(f3));
  t.same(await ids(t, 'folderId=none'), idsOf(f4, f5, f7));
  t.same(await ids(t, 'folderId=none&includeSubfolders=true'), idsOf(f4, f5, f7), 'none has no subfolders');
  t.same(await ids(t, `folderId=${shots.toUpperCase()}`), idsOf(f1, f6), 'an upper-case uuid names the same folder');
  t.same(await ids(t, 'includeSubfolders=true'), newestFirst, 'includeSubfolders alone filters nothing');
});

t.test('tags: all must match, normalised like upload tags', async (t) => {
  t.same(await ids(t, 'tags=server:eu-1'), idsOf(f1, f3, f5, f8));
  t.same(await ids(t, 'tags=server:eu-1,map:1'), idsOf(f1, f8));
  t.same(await ids(t, `tags=${encodeURIComponent(' server:eu-1 , map:1 ')}`), idsOf(f1, f8), 'blanks around tags are trimmed');
  t.same(await ids(t, 'tags=map:1,map:1'), idsOf(f1, f2, f8), 'duplicates collapse');
  t.same(await ids(t, 'tags=server:eu-1,music'), []);
  t.same(await ids(t, 'tags=nope'), []);
  t.same(await ids(t, 'tags='), newestFirst, 'an empty tags parameter filters nothing');
});

t.test('search: case-insensitive substring of the file name, wildcards literal', async (t) => {
  t.same(await ids(t, 'search=shot'), idsOf(f1, f2, f8));
  t.same(await ids(t, 'search=SHOT-'), idsOf(f1, f2, f8));
  t.same(await ids(t, 'search=upper.png'), idsOf(f8));
  t.same(await ids(t, `search=${encodeURIComponent('100%')}`), idsOf(f6));
  t.same(await ids(t, `search=${encodeURIComponent('%')}`), idsOf(f6), '% is literal');
  t.same(await ids(t, 'search=_'), idsOf(f6), '_ is literal');
  t.same(await ids(t, `search=${encodeURIComponent('!')}`), [], '! (the escape character) is literal');
  t.same(await ids(t, `search=${encodeURIComponent("'; drop table media_file; --")}`), []);
  t.same(await ids(t, 'search=nothing-like-this'), []);
});

t.test('type: image, video, audio, document, all', async (t) => {
  t.same(await ids(t, 'type=image'), idsOf(f1, f2, f8));
  t.same(await ids(t, 'type=video'), idsOf(f3));
  t.same(await ids(t, 'type=audio'), idsOf(f4));
  t.same(await ids(t, 'type=document'), idsOf(f5, f6), 'application/pdf and text/plain; charset=utf-8');
  t.same(await ids(t, 'type=all'), newestFirst);
});

t.test('filters combine with AND', async (t) => {
  t.same(await ids(t, `folderId=${shots}&includeSubfolders=true&type=image&tags=map:1`), idsOf(f1, f2, f8));
  t.same(await ids(t, `folderId=${shots}&includeSubfolders=true&type=image&tags=map:1&search=upper`), idsOf(f8));
  t.same(await ids(t, `folderId=${shots}&type=document`), idsOf(f6));
  t.same(await ids(t, 'folderId=none&tags=server:eu-1&type=document&search=man'), idsOf(f5));
  t.same(await ids(t, 'folderId=none&type=image'), []);
});

t.test('paging by headers with totalCount for the filters', async (t) => {
  const pages: string[] = [];
  for (let pageNumber = 1; pageNumber <= 3; pageNumber++) {
    const response = await list('', { pageNumber: String(pageNumber), pageSize: '3' });
    t.equal(response.status, 200);
    t.equal(response.body.totalCount, 8);
    t.equal(response.body.media.length, pageNumber < 3 ? 3 : 2);
    pages.push(...response.body.media.map((record: { id: string }) => record.id));
  }
  t.same(pages, newestFirst, 'pages concatenate to the whole list, no overlap');
  const past = await list('', { pageNumber: '4', pageSize: '3' });
  t.same(past.body, { media: [], totalCount: 8, usedTeamStorage: past.body.usedTeamStorage }, 'past the end is empty');
  const filtered = await list('tags=server:eu-1', { pageNumber: '2', pageSize: '3' });
  t.equal(filtered.body.totalCount, 4);
  t.same(filtered.body.media.map((record: { id: string }) => record.id), [f1.id]);
  t.equal((await list('', { pageSize: '500' })).status, 200);
});

t.test('equal timestamps: order by id, pages stable', async (t) => {
  const db = await connectPg(server.databaseUrl);
  try {
    await db.query(`update media_file set created_at = '2026-01-01T00:00:00Z' where team_id = $1`, [teamA.teamId]);
  } finally {
    await db.end();
  }
  const byId = [...newestFirst].sort().reverse();
  t.same(await ids(t, ''), byId);
  const pages: string[] = [];
  for (let pageNumber = 1; pageNumber <= 4; pageNumber++) {
    const response = await list('', { pageNumber: String(pageNumber), pageSize: '2' });
    pages.push(...response.body.media.map((record: { id: string }) => record.id));
  }
  t.same(pages, byId);
});

t.test('every invalid value is 400', async (t) => {
  const invalid = [
    'folderId=not-a-uuid',
    'folderId=NONE',
    'includeSubfolders=yes',
    'includeSubfolders=1',
    `tags=${encodeURIComponent('bad tag')}`,
    'tags=Server:EU-1',
    'tags=a,,b',
    `tags=${'x'.repeat(65)}`,
    `tags=${Array.from({ length: 21 }, (_, index) => `t${index}`).join(',')}`,
    `search=${'s'.repeat(256)}`,
    'type=pictures',
    'type=IMAGE',
  ];
  for (const query of invalid) expectError(t, await list(query), 400, 'error.badRequest');
  t.equal((await list(`search=${'s'.repeat(255)}`)).status, 200, '255 characters is allowed');
  const badHeaders: Record<string, string>[] = [{ pageSize: '0' }, { pageSize: '501' }, { pageSize: 'x' }, { pageNumber: '0' }, { pageNumber: '1.5' }];
  for (const headers of badHeaders) {
    expectError(t, await list('', headers), 400, 'error.badRequest');
  }
});

t.test('another team\'s folder is 404, never its files', async (t) => {
  for (const query of [`folderId=${bFolder}`, `folderId=${bFolder}&includeSubfolders=true`, 'folderId=00000000-0000-4000-8000-000000000000']) {
    const response = await list(query);
    expectError(t, response, 404, 'error.notFound');
    t.notOk(JSON.stringify(response.body).includes(bFile.id));
  }
  const bList = await server.media('GET', `/v1/cdn/media/${teamB.teamId}?tags=server:eu-1`, teamB.key);
  t.same(bList.body.media.map((record: { id: string }) => record.id), [bFile.id], 'team B sees only its own file');
  expectError(t, await server.media('GET', `/v1/cdn/media/${teamB.teamId}?folderId=${shots}`, teamB.key), 404, 'error.notFound');
  expectError(t, await list('', {}, teamB.key), 401, 'error.unauthorized');
});
