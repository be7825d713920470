import t from 'tap';
import { startTestServer } from '../helpers/server.ts';
import { uploadMultipart } from '../helpers/uploads.ts';

t.test('making a file private stops its public link; its signed link serves it', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('Visibility');
  const content = Buffer.from('screenshot bytes');
  const uploaded = await uploadMultipart(server, team.teamId, team.key, { content, fileName: 'shot.txt', contentType: 'text/plain' });
  const publicUrl: string = uploaded.body.publicUrl;
  t.equal((await fetch(publicUrl)).status, 200, 'public while public');

  const updated = await server.media('PATCH', `/v1/cdn/media/${team.teamId}/update/${uploaded.body.id}`, team.key, { body: { public: false } });
  t.equal(updated.status, 200);
  t.equal(updated.body.publicUrl, null);
  t.equal((await fetch(publicUrl)).status, 404, 'the public link stops serving');

  const link = await server.media('GET', `/v1/cdn/media/${team.teamId}/${uploaded.body.id}`, team.key);
  t.match(link.body.url, /[?&]signature=/);
  const signed = await fetch(link.body.url);
  t.equal(signed.status, 200, 'the signed link serves it');
  t.same(Buffer.from(await signed.arrayBuffer()), content);

  await server.media('PATCH', `/v1/cdn/media/${team.teamId}/update/${uploaded.body.id}`, team.key, { body: { public: true } });
  t.equal((await fetch(publicUrl)).status, 200, 'public again');
});
