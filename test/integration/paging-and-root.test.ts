import t from 'tap';
import { expectError, startTestServer } from '../helpers/server.ts';
import { pngLike, uploadMultipart } from '../helpers/uploads.ts';

// GET / for someone who opens the service's address, and paging given as query parameters.

const server = await startTestServer(t, { settings: { RATE_LIMIT_POINTS: 10_000 } });
const team = await server.createTeam('Alpha');
const base = `/v1/cdn/media/${team.teamId}`;
const ids: string[] = [];
for (let index = 0; index < 5; index++) {
  const uploaded = await uploadMultipart(server, team.teamId, team.key, { content: pngLike(100 + index), fileName: `f${index}.png`, contentType: 'image/png' });
  ids.unshift(uploaded.body.id); // newest first
}

t.test('GET / points to the docs and the OpenAPI document', async (t) => {
  const response = await server.request('GET', '/');
  t.equal(response.status, 200);
  t.match(response.body, { docs: '/docs', openapi: '/v1/openapi.json' });
  t.match(response.headers.get('content-type'), /application\/json/);
});

t.test('pageNumber and pageSize as query parameters are honoured', async (t) => {
  const page = await server.media('GET', `${base}?pageNumber=2&pageSize=2`, team.key);
  t.equal(page.status, 200);
  t.same(page.body.media.map((file: { id: string }) => file.id), ids.slice(2, 4), 'the second page of two');
  t.equal(page.body.totalCount, 5);
  const sized = await server.media('GET', `${base}?pageSize=3`, team.key);
  t.same(sized.body.media.map((file: { id: string }) => file.id), ids.slice(0, 3));
});

t.test('the headers win over the query parameters', async (t) => {
  const page = await server.media('GET', `${base}?pageNumber=1&pageSize=1`, team.key, { headers: { pageNumber: '3', pageSize: '2' } });
  t.same(page.body.media.map((file: { id: string }) => file.id), ids.slice(4, 5), 'page 3 of two: the last file');
  const mixed = await server.media('GET', `${base}?pageNumber=2`, team.key, { headers: { pageSize: '4' } });
  t.same(mixed.body.media.map((file: { id: string }) => file.id), ids.slice(4, 5), 'pageNumber from the query, pageSize from the header');
});

t.test('bad query paging is a 400 naming the parameter, as for the headers', async (t) => {
  for (const query of ['pageSize=0', 'pageSize=1000000', 'pageNumber=0', 'pageNumber=x', 'pageSize=2.5']) {
    const response = await server.media('GET', `${base}?${query}`, team.key);
    expectError(t, response, 400, 'error.badRequest');
    t.equal(response.body.value, query.split('=')[0], `${query}: names the parameter`);
  }
});

t.test('automation deliveries page by query parameters too', async (t) => {
  const created = await server.media('POST', `/v1/teams/${team.teamId}/automations`, team.key, { body: { name: 'hook', url: 'https://hooks.example.com/in' } });
  t.equal(created.status, 201);
  const deliveries = await server.media('GET', `/v1/teams/${team.teamId}/automations/${created.body.id}/deliveries?pageSize=0`, team.key);
  expectError(t, deliveries, 400, 'error.badRequest');
  const fine = await server.media('GET', `/v1/teams/${team.teamId}/automations/${created.body.id}/deliveries?pageSize=5&pageNumber=1`, team.key);
  t.equal(fine.status, 200);
});
