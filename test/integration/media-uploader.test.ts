import t from 'tap';
import { join, signUp } from '../helpers/accounts.ts';
import { expectError, startTestServer } from '../helpers/server.ts';
import { pngLike, uploadMultipart } from '../helpers/uploads.ts';

// GET /v1/cdn/media/{teamId}/{mediaId} names the API key that uploaded the file (uploadedBy):
// directly, through an upload URL the key made, and null for a signed-in member or a deleted key.

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 100_000 } });
const team = await server.createTeam('Uploaders');
const base = `/v1/cdn/media/${team.teamId}`;

async function keyNamed(description: string | undefined) {
  const created = await server.media('POST', `/v1/teams/${team.teamId}/api-keys`, team.key, { body: description === undefined ? {} : { description } });
  if (created.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(created.body)}`);
  return { keyId: created.body.id as string, key: created.body.key as string };
}

async function uploadWith(key: string, fileName: string): Promise<string> {
  const upload = await uploadMultipart(server, team.teamId, key, { content: pngLike(1200), fileName });
  if (upload.status !== 201) throw new Error(`upload failed: ${JSON.stringify(upload.body)}`);
  return upload.body.id;
}

t.test('a file uploaded with a key names that key, also with a transform', async (t) => {
  const server1 = await keyNamed('<b>fleet</b> server 1');
  const id = await uploadWith(server1.key, 'shot.png');
  const read = await server.media('GET', `${base}/${id}`, team.key);
  t.equal(read.status, 200);
  t.same(read.body.uploadedBy, { keyId: server1.keyId, name: '<b>fleet</b> server 1' }, 'the key and its description, as stored');
  t.match(read.body.url, /^http/, 'the link is still there');
  const resized = await server.media('GET', `${base}/${id}?w=64`, team.key);
  t.same(resized.body.uploadedBy, { keyId: server1.keyId, name: '<b>fleet</b> server 1' });
});

t.test('a key without a description: its id, name null', async (t) => {
  const unnamed = await keyNamed(undefined);
  const id = await uploadWith(unnamed.key, 'unnamed.png');
  t.same((await server.media('GET', `${base}/${id}`, team.key)).body.uploadedBy, { keyId: unnamed.keyId, name: null });
});

t.test('through an upload URL the key made: that key', async (t) => {
  const maker = await keyNamed('launcher backend');
  const made = await server.media('POST', `${base}/upload-urls`, maker.key, { body: { fileName: 'from-client.png' } });
  t.equal(made.status, 201);
  const form = new FormData();
  form.append('file', new Blob([pngLike(900)], { type: 'image/png' }), 'from-client.png');
  const used = await fetch(made.body.url, { method: 'POST', body: form });
  t.equal(used.status, 201);
  const { id } = (await used.json()) as { id: string };
  t.same((await server.media('GET', `${base}/${id}`, team.key)).body.uploadedBy, { keyId: maker.keyId, name: 'launcher backend' });
});

t.test('a signed-in member\'s upload: null', async (t) => {
  const user = await signUp(server);
  await join(server, team, user.userId, ['team.media.view', 'team.media.upload']);
  const id = await uploadWith(user.token, 'member.png');
  const read = await server.media('GET', `${base}/${id}`, user.token);
  t.equal(read.status, 200);
  t.equal(read.body.uploadedBy, null);
});

t.test('a deleted key: null (the media row forgets it)', async (t) => {
  const doomed = await keyNamed('retired');
  const id = await uploadWith(doomed.key, 'old.png');
  t.equal((await server.media('DELETE', `/v1/teams/${team.teamId}/api-keys/${doomed.keyId}`, team.key)).status, 204);
  const read = await server.media('GET', `${base}/${id}`, team.key);
  t.equal(read.status, 200);
  t.equal(read.body.uploadedBy, null);
});

t.test('another team\'s file is still a 404, naming no key', async (t) => {
  const id = await uploadWith(team.key, 'mine.png');
  const stranger = await server.createTeam('Stranger');
  const read = await server.media('GET', `/v1/cdn/media/${stranger.teamId}/${id}`, stranger.key);
  expectError(t, read, 404, 'error.notFound');
  t.equal(read.body.uploadedBy, undefined);
});
