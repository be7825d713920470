import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { join as joinTeam, signUp, sql } from '../helpers/accounts.ts';
import { expectError, startTestServer, type CreatedTeam } from '../helpers/server.ts';
import { storedObjects } from '../helpers/storage.ts';
import { memberWithKey } from '../helpers/team-admin.ts';
import { tusMetadata, tusRequest } from '../helpers/tus.ts';
import { createUploadUrl, postToUrl } from '../helpers/upload-urls.ts';
import { expectNothingCounted, KiB, pngLike, teamStorageState } from '../helpers/uploads.ts';

// Upload URLs and tus uploads follow the access of the key or session that made them: once that
// maker could no longer upload, a use of its URL and a further PATCH of its upload are refused (403)
// and nothing is stored. Each way of losing access, against a real server and PostgreSQL.
const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000, UPLOAD_URL_TEAM_RATE_LIMIT_POINTS: 100_000 } });

const PNG = { 'content-type': 'image/png' };

/** A credential that may upload now, and how it loses that. */
interface Maker {
  credential: string;
  loseAccess: () => Promise<void>;
}

async function expectStatus(response: Promise<{ status: number; body: unknown }>, status: number, what: string): Promise<void> {
  const answer = await response;
  if (answer.status !== status) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
}

async function memberMaker(team: CreatedTeam, loseAccess: (member: { memberId: string; key: string; keyId: string }) => Promise<void>): Promise<Maker> {
  const member = await memberWithKey(server, team.teamId, 'uploader', ['team.media.upload', 'team.media.view']);
  return { credential: member.key, loseAccess: () => loseAccess(member) };
}

async function sessionMaker(team: CreatedTeam, loseAccess: (user: { token: string; memberId: string }) => Promise<void>): Promise<Maker> {
  const user = await signUp(server);
  const memberId = await joinTeam(server, team, user.userId, ['team.media.upload']);
  return { credential: user.token, loseAccess: () => loseAccess({ token: user.token, memberId }) };
}

const T = (team: CreatedTeam) => `/v1/teams/${team.teamId}`;

const ways: [string, (team: CreatedTeam) => Promise<Maker>][] = [
  ['the member loses team.media.upload', (team) => memberMaker(team, (member) =>
    expectStatus(server.media('PATCH', `${T(team)}/members/${member.memberId}`, team.key, { body: { permissions: ['team.media.view'] } }), 200, 'permission removed'))],
  ['the member is kicked', (team) => memberMaker(team, (member) =>
    expectStatus(server.media('DELETE', `${T(team)}/members/${member.memberId}`, team.key), 204, 'kick'))],
  ['the member leaves', (team) => memberMaker(team, (member) => expectStatus(server.media('POST', `${T(team)}/leave`, member.key), 204, 'leave'))],
  ['the key is rerolled', (team) => memberMaker(team, (member) => expectStatus(server.admin('POST', `/v1/admin/api-keys/${member.keyId}/reroll`), 200, 'reroll'))],
  ['the key is deleted', (team) => memberMaker(team, async (member) => {
    const deleted = await server.admin('DELETE', `/v1/admin/api-keys/${member.keyId}`);
    if (deleted.status >= 300) throw new Error(`key deletion: ${deleted.status}`);
  })],
  ['the session signs out', (team) => sessionMaker(team, (user) => expectStatus(server.media('POST', '/v1/auth/sign-out', user.token), 204, 'sign-out'))],
  ['the session\'s user is kicked', (team) => sessionMaker(team, (user) =>
    expectStatus(server.media('DELETE', `${T(team)}/members/${user.memberId}`, team.key), 204, 'kick'))],
];

async function objectCount(teamId: string): Promise<number> {
  return (await storedObjects('fs', server.dataDir, teamId)).objects.length;
}

let teams = 0;
for (const [way, makeMaker] of ways) {
  t.test(`upload URL: refused with 403 once ${way}; nothing stored; the owner's URL still works`, async (t) => {
    const team = await server.createTeam(`Url${++teams}`);
    const maker = await makeMaker(team);
    const url = await createUploadUrl(server, team.teamId, maker.credential, { fileName: 'later.png' });
    const control = await createUploadUrl(server, team.teamId, maker.credential, { fileName: 'now.png' });
    const ownerUrl = await createUploadUrl(server, team.teamId, team.key, { fileName: 'owner.png' });
    t.equal((await postToUrl(control.url, pngLike(2 * KiB), PNG)).status, 201, 'the maker\'s URL works while it may upload');
    const before = await teamStorageState(server.databaseUrl, team.teamId);
    const objectsBefore = await objectCount(team.teamId);

    await maker.loseAccess();
    expectError(t, await postToUrl(url.url, pngLike(3 * KiB), PNG), 403, 'error.media.uploadUrlRevoked');
    await expectNothingCounted(t, server, team.teamId, before);
    t.equal(await objectCount(team.teamId), objectsBefore, 'no object stored');
    t.equal((await postToUrl(ownerUrl.url, pngLike(4 * KiB), PNG)).status, 201, 'a URL the team key made still works');
  });

  t.test(`tus: a further PATCH is refused with 403 once ${way}; the upload is terminated`, async (t) => {
    const team = await server.createTeam(`Tus${++teams}`);
    const maker = await makeMaker(team);
    const content = pngLike(64 * KiB);
    const before = await teamStorageState(server.databaseUrl, team.teamId);
    const created = await tusRequest(server, 'POST', `/v1/cdn/media/${team.teamId}/tus`, maker.credential, {
      'upload-length': String(content.length), 'upload-metadata': tusMetadata({ filename: 'clip.png' }),
    });
    t.equal(created.status, 201);
    const path = created.headers.get('location')!;
    const patch = (key: string, offset: number, body: Buffer) =>
      tusRequest(server, 'PATCH', path, key, { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, body);
    t.equal((await patch(maker.credential, 0, content.subarray(0, 16 * KiB))).status, 204, 'the maker appends while it may upload');

    await maker.loseAccess();
    // The team key may upload, but not on behalf of a maker that no longer may.
    const refused = await patch(team.key, 16 * KiB, content.subarray(16 * KiB));
    expectError(t, refused, 403, 'error.tus.uploadRevoked');
    t.equal(refused.headers.get('tus-resumable'), '1.0.0');
    t.equal((await tusRequest(server, 'HEAD', path, team.key)).status, 404, 'the upload is terminated');
    await expectNothingCounted(t, server, team.teamId, before);
    t.equal(await objectCount(team.teamId), 0, 'no object stored');
    t.same(await sql(server, 'select id from tus_upload where team_id = $1', [team.teamId]), [], 'no upload row');
    t.same(await readdir(join(server.dataDir, 'files', '.uploads', 'tus')).catch(() => []), [], 'its bytes are gone');
  });
}

t.test('URLs and tus uploads of the owner and of a key with no member work as long as the key exists', async (t) => {
  const team = await server.createTeam('Owner');
  const url = await createUploadUrl(server, team.teamId, team.key, { fileName: 'a.png' });
  // Changes to other members and keys of the team clear the team's cached keys: the URL is asked again.
  const other = await memberWithKey(server, team.teamId, 'other', ['team.media.upload']);
  await expectStatus(server.media('DELETE', `${T(team)}/members/${other.memberId}`, team.key), 204, 'kick');
  t.equal((await postToUrl(url.url, pngLike(KiB), PNG)).status, 201);
  const created = await tusRequest(server, 'POST', `/v1/cdn/media/${team.teamId}/tus`, team.key, {
    'upload-length': String(KiB), 'upload-metadata': tusMetadata({ filename: 'b.png' }),
  });
  const done = await tusRequest(server, 'PATCH', created.headers.get('location')!, team.key, { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, pngLike(KiB));
  t.equal(done.status, 204);
  t.ok(done.headers.get('media-id'));
});
