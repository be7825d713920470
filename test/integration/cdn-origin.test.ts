import t from 'tap';
import { startTestServer } from '../helpers/server.ts';
import { uploadMultipart } from '../helpers/uploads.ts';

t.test('with CDN_URL, public links point at the CDN and the service still answers as its origin', async (t) => {
  const server = await startTestServer(t, { settings: { CDN_URL: 'https://cdn.example.test/' } });
  const team = await server.createTeam('Cdn');
  const content = Buffer.from('served through a CDN');
  const uploaded = await uploadMultipart(server, team.teamId, team.key, { content, fileName: 'a.txt', contentType: 'text/plain' });
  t.equal(uploaded.body.publicUrl, `https://cdn.example.test/${uploaded.body.path}`, 'the upload answers the CDN link');
  const link = await server.media('GET', `/v1/cdn/media/${team.teamId}/${uploaded.body.id}`, team.key);
  t.equal(link.body.url, uploaded.body.publicUrl, 'GET /{mediaId} answers the CDN link');
  const origin = await fetch(`${server.baseUrl}/${uploaded.body.path}`);
  t.equal(origin.status, 200, 'the CDN can pull the file from the service');
  t.same(Buffer.from(await origin.arrayBuffer()), content);
  t.match(origin.headers.get('cache-control'), /public/);
});
