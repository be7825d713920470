import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { repo } from '../helpers/service-process.ts';
import { startTestServer } from '../helpers/server.ts';
import { pngLike } from '../helpers/uploads.ts';

// The FiveM recipe of docs/upload-urls.md, sent as its two halves send it: the server makes an
// upload URL with the team key (PerformHttpRequest, the JSON body of server.lua), the game client
// uploads a screenshot to it with screenshot-basic's requestScreenshotUpload (a FormData with
// `files[]` named screenshot.jpg, from the NUI origin, no header of ours).

const server = await startTestServer(t);
const team = await server.createTeam('FiveM');
const doc = await readFile(join(repo, 'docs/upload-urls.md'), 'utf8');

t.test('the recipe in the docs is the one tested here', async (t) => {
  for (const line of [
    "folder = 'fivem/screenshots',",
    "tags = { 'fivem', 'player:' .. playerId },",
    'public = true,',
    "contentTypes = { 'image/*' },",
    'maxSizeBytes = 5000000,',
    'expiresInSeconds = 120,',
    "PerformHttpRequest(MEDIA_URL .. '/v1/cdn/media/' .. TEAM_ID .. '/upload-urls'",
    "exports['screenshot-basic']:requestScreenshotUpload(url, 'files[]', { encoding = 'jpg', quality = 0.85 }",
  ]) t.ok(doc.includes(line), line);
});

t.test('FiveM client side with an upload URL: the server makes it, the game client uploads with no key', async (t) => {
  const playerId = 12;
  // server.lua: json.encode of the table, sent with the key.
  const made = await fetch(`${server.baseUrl}/v1/cdn/media/${team.teamId}/upload-urls`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${team.key}` },
    body: JSON.stringify({
      folder: 'fivem/screenshots', tags: ['fivem', `player:${playerId}`], public: true, contentTypes: ['image/*'], maxSizeBytes: 5000000, expiresInSeconds: 120,
    }),
  });
  t.equal(made.status, 201);
  const { url } = (await made.json()) as { url: string };

  // client.lua -> screenshot-basic's NUI page: fetch(url, { method: 'POST', mode: 'cors', body: formData }).
  const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), pngLike(40_000).subarray(4)]);
  const form = new FormData();
  form.append('files[]', new Blob([jpeg], { type: 'image/jpeg' }), 'screenshot.jpg');
  const uploaded = await fetch(url, { method: 'POST', headers: { Origin: 'https://cfx-nui-screenshot-basic' }, body: form });
  t.equal(uploaded.status, 201);
  t.equal(uploaded.headers.get('access-control-allow-origin'), '*', 'the NUI page may read the answer');
  const media = (await uploaded.json()) as { publicUrl: string; fileName: string; tags: string[]; contentType: string; folderId: string };
  t.match(media, { fileName: 'screenshot.jpg', tags: ['fivem', `player:${playerId}`], contentType: 'image/jpeg', publicUrl: String, folderId: String });
  // TriggerServerEvent('media:uploaded', media.publicUrl): the link serves the screenshot.
  const served = await fetch(media.publicUrl);
  t.equal(served.status, 200);
  t.same(Buffer.from(await served.arrayBuffer()), jpeg);

  // The player cannot use the URL again.
  const again = new FormData();
  again.append('files[]', new Blob([jpeg], { type: 'image/jpeg' }), 'screenshot.jpg');
  const second = await fetch(url, { method: 'POST', headers: { Origin: 'https://cfx-nui-screenshot-basic' }, body: again });
  t.equal(second.status, 410);
});
