import t from 'tap';
import type { Test } from 'tap';
import { ServiceError } from '../../src/errors/service-error.ts';
import { Router } from '../../src/http/router.ts';
import type { RouteMatch } from '../../src/http/router.ts';
import type { Handler, HttpMethod } from '../../src/http/types.ts';

/** A distinct handler per name, so a match can be told apart by identity. */
function handler(name: string): Handler {
  const fn: Handler = () => ({ status: 200, body: name });
  Object.defineProperty(fn, 'name', { value: name });
  return fn;
}

function router(routes: [HttpMethod, string, Handler][]): Router {
  const r = new Router();
  for (const [method, pattern, h] of routes) r.add({ method, pattern, handler: h });
  return r;
}

/** The ServiceError a match throws (fails the test when it does not throw one). */
function matchError(t: Test, r: Router, method: string, path: string): ServiceError {
  try {
    const result: RouteMatch = r.match(method, path);
    t.fail(`expected ${method} ${path} to throw, matched ${result.handler.name}`);
  } catch (error) {
    if (error instanceof ServiceError) return error;
    t.fail(`expected a ServiceError, got ${String(error)}`);
  }
  return new ServiceError({ name: 'none', status: 0, messageKey: 'none', message: 'none' });
}

const TEAM = '0f3c2b8e-4c1a-4d6e-9b7a-2f5d8e1c3a4b';
const MEDIA = '5b1c7d9e-2a4f-4e8b-8c6d-1a3e5f7b9d2c';
const getTeam = handler('getTeam');
const getMe = handler('getMe');
const getMedia = handler('getMedia');
const listMedia = handler('listMedia');
const postMedia = handler('postMedia');
const deleteMedia = handler('deleteMedia');
const putMedia = handler('putMedia');

t.test('a static segment beats a parameter regardless of registration order', (t) => {
  for (const order of ['param first', 'static first'] as const) {
    const routes: [HttpMethod, string, Handler][] = [
      ['GET', '/v1/users/:userId', getTeam],
      ['GET', '/v1/users/me', getMe],
    ];
    if (order === 'static first') routes.reverse();
    const r = router(routes);
    t.equal(r.match('GET', '/v1/users/me').handler, getMe, `${order}: static wins`);
    t.same(r.match('GET', '/v1/users/me').params, {}, `${order}: no params for the static route`);
    t.equal(r.match('GET', '/v1/users/abc').handler, getTeam, `${order}: others go to the parameter`);
    t.same(r.match('GET', '/v1/users/abc').params, { userId: 'abc' });
  }
  t.end();
});

t.test('the first segment where two routes differ decides, not the number of parameters', (t) => {
  const staticEarly = handler('staticEarly');
  const staticLate = handler('staticLate');
  for (const reversed of [false, true]) {
    const routes: [HttpMethod, string, Handler][] = [
      ['GET', '/v1/:a/files', staticLate],
      ['GET', '/v1/media/:b', staticEarly],
    ];
    if (reversed) routes.reverse();
    const r = router(routes);
    const match = r.match('GET', '/v1/media/files');
    t.equal(match.handler, staticEarly, '/v1/media/:b outranks /v1/:a/files');
    t.same(match.params, { b: 'files' });
    t.equal(r.match('GET', '/v1/other/files').handler, staticLate);
  }
  t.end();
});

t.test('multiple parameters are all captured', (t) => {
  const r = router([['GET', '/v1/cdn/media/:teamId/:fileId', getMedia]]);
  const match = r.match('GET', `/v1/cdn/media/${TEAM}/file-2`);
  t.equal(match.handler, getMedia);
  t.same(match.params, { teamId: TEAM, fileId: 'file-2' });
  t.end();
});

t.test('parameters are percent-decoded; static segments are compared as sent', (t) => {
  const r = router([
    ['GET', '/v1/media/:name', getMedia],
    ['GET', '/v1/users/me', getMe],
    ['GET', '/v1/users/:userId', getTeam],
  ]);
  t.same(r.match('GET', '/v1/media/hello%20world').params, { name: 'hello world' });
  t.same(r.match('GET', '/v1/media/caf%C3%A9').params, { name: 'café' });
  t.same(r.match('GET', '/v1/media/a%2Fb').params, { name: 'a/b' }, 'an encoded slash stays inside the parameter');
  t.same(r.match('GET', '/v1/media/a+b').params, { name: 'a+b' }, '+ is not a space in a path');
  const encodedStatic = r.match('GET', '/v1/users/%6De');
  t.equal(encodedStatic.handler, getTeam, 'an encoded static segment does not match the static route');
  t.same(encodedStatic.params, { userId: 'me' });
  t.end();
});

t.test('bad percent-encoding in a parameter is a 400 ServiceError', (t) => {
  const r = router([['GET', '/v1/media/:name', getMedia]]);
  for (const path of ['/v1/media/%', '/v1/media/%zz', '/v1/media/%E0%A4%A']) {
    const error = matchError(t, r, 'GET', path);
    t.equal(error.status, 400, path);
    t.equal(error.name, 'BadRequestError');
    t.equal(error.messageKey, 'error.badRequest');
    t.match(error.message, 'percent-encoding');
  }
  t.end();
});

t.test('an unknown path is a 404 ServiceError error.notFound', (t) => {
  const r = router([
    ['GET', '/v1/media/:id', getMedia],
    ['GET', '/v1/users/me', getMe],
  ]);
  for (const path of ['/nope', '/v1/media', '/v1/media/a/b', '/', '', '/v1/users/you']) {
    const error = matchError(t, r, 'GET', path);
    t.equal(error.status, 404, JSON.stringify(path));
    t.equal(error.name, 'NotFoundError');
    t.equal(error.messageKey, 'error.notFound');
    t.equal(error.message, `There is no such route: GET ${path} (GET /docs lists the routes)`);
    t.same(error.headers, {});
  }
  const empty = matchError(t, new Router(), 'GET', '/anything');
  t.equal(empty.status, 404, 'an empty router finds nothing');
  t.end();
});

t.test('a known path with another method is a 405 with an Allow header', (t) => {
  const r = router([
    ['GET', '/v1/media/:id', getMedia],
    ['DELETE', '/v1/media/:id', deleteMedia],
    ['PUT', '/v1/media/:id', putMedia],
    ['GET', '/v1/media', listMedia],
    ['POST', '/v1/media', postMedia],
  ]);
  const error = matchError(t, r, 'PATCH', '/v1/media/abc');
  t.equal(error.status, 405);
  t.equal(error.name, 'MethodNotAllowedError');
  t.equal(error.messageKey, 'error.methodNotAllowed');
  t.equal(error.message, 'Method PATCH is not allowed on /v1/media/abc');
  const allowed = error.headers.Allow?.split(', ').sort();
  t.same(allowed, ['DELETE', 'GET', 'PUT'], 'Allow lists exactly the methods of that path');

  const onList = matchError(t, r, 'DELETE', '/v1/media');
  t.equal(onList.status, 405);
  t.same(onList.headers.Allow?.split(', ').sort(), ['GET', 'POST']);
  t.end();
});

t.test('Allow gathers methods from every route whose pattern matches the path', (t) => {
  const r = router([
    ['GET', '/v1/users/:userId', getTeam],
    ['DELETE', '/v1/users/me', handler('deleteMe')],
  ]);
  const error = matchError(t, r, 'POST', '/v1/users/me');
  t.same(error.headers.Allow?.split(', ').sort(), ['DELETE', 'GET'], 'a parameter route matching the path counts too');
  t.same(matchError(t, r, 'POST', '/v1/users/x').headers.Allow, 'GET');
  t.end();
});

t.test('a method registered only on the parameter route falls through from the static one', (t) => {
  const r = router([
    ['DELETE', '/v1/users/me', handler('deleteMe')],
    ['GET', '/v1/users/:userId', getTeam],
  ]);
  const match = r.match('GET', '/v1/users/me');
  t.equal(match.handler, getTeam, 'static-over-parameter ranking is per method, not per path');
  t.same(match.params, { userId: 'me' });
  t.end();
});

t.test('HEAD matches a GET route', (t) => {
  const r = router([
    ['GET', '/v1/media/:id', getMedia],
    ['POST', '/v1/upload', postMedia],
  ]);
  const match = r.match('HEAD', '/v1/media/x');
  t.equal(match.handler, getMedia);
  t.same(match.params, { id: 'x' });
  const error = matchError(t, r, 'HEAD', '/v1/upload');
  t.equal(error.status, 405, 'HEAD on a path without GET is 405');
  t.equal(error.headers.Allow, 'POST');
  t.end();
});

t.test('an explicit HEAD route wins over GET when it ranks first', (t) => {
  const head = handler('head');
  const r = router([
    ['GET', '/v1/media/:id', getMedia],
    ['HEAD', '/v1/media/:id', head],
  ]);
  // Same rank: registration order decides (the sort is stable), so GET comes first and takes HEAD.
  t.equal(r.match('HEAD', '/v1/media/x').handler, getMedia);
  t.equal(r.match('GET', '/v1/media/x').handler, getMedia);
  t.end();
});

t.test('method names are compared exactly', (t) => {
  const r = router([['GET', '/v1/media', listMedia]]);
  const error = matchError(t, r, 'get', '/v1/media');
  t.equal(error.status, 405, 'a lower-case method is not GET');
  t.end();
});

t.test('one trailing slash is ignored; an empty segment elsewhere is a segment', (t) => {
  const r = router([
    ['GET', '/v1/media', listMedia],
    ['GET', '/v1/media/:id', getMedia],
    ['GET', '/v1/trailing/', handler('trailing')],
    ['GET', '/', handler('root')],
  ]);
  t.equal(r.match('GET', '/v1/media/').handler, listMedia, 'trailing slash');
  t.equal(r.match('GET', '/v1/trailing').handler.name, 'trailing', 'a pattern with a trailing slash matches without it');
  t.equal(r.match('GET', '/').handler.name, 'root');
  t.same(r.match('GET', '/v1/media//').params, { id: '' }, 'an empty parameter, not the list');
  for (const path of ['//v1//media', '/v1/media///', '/v1/media//abc/']) {
    t.equal(matchError(t, r, 'GET', path).status, 404, `${path}: no route`);
  }
  t.end();
});

t.test('a team id that is empty or not a UUID is a 404 naming it, before 401 or 405 could be', (t) => {
  const r = router([
    ['GET', '/v1/cdn/media/:teamId', listMedia],
    ['POST', '/v1/cdn/media/:teamId/upload', postMedia],
    ['GET', '/v1/cdn/media/:teamId/:mediaId', getMedia],
  ]);
  for (const [method, path, teamId] of [
    ['POST', '/v1/cdn/media//upload', ''],
    ['GET', '/v1/cdn/media/not-a-uuid', 'not-a-uuid'],
    ['POST', '/v1/cdn/media/not-a-uuid/upload', 'not-a-uuid'],
    ['GET', `/v1/cdn/media/${TEAM}x/${MEDIA}`, `${TEAM}x`],
  ] as const) {
    const error = matchError(t, r, method, path);
    t.equal(error.status, 404, `${method} ${path}`);
    t.equal(error.messageKey, 'error.notFound');
    t.equal(error.value, teamId, 'the team id is the value');
    t.match(error.message, `Could not find team "${teamId}": a team id is a UUID`);
  }
  t.equal(r.match('POST', `/v1/cdn/media/${TEAM}/upload`).handler, postMedia, 'a UUID team id matches');
  t.equal(r.match('GET', `/v1/cdn/media/${TEAM.toUpperCase()}`).handler, listMedia, 'in either case');
  t.equal(matchError(t, r, 'DELETE', `/v1/cdn/media/${TEAM}`).status, 405, 'a good team id with another method is still 405');
  t.end();
});

t.test('a segment that is no media id in the place of one matches no route', (t) => {
  const r = router([
    ['GET', '/v1/cdn/media/:teamId/:mediaId', getMedia],
    ['GET', '/v1/cdn/media/:teamId/tags', handler('tags')],
  ]);
  t.equal(r.match('GET', `/v1/cdn/media/${TEAM}/${MEDIA}`).handler, getMedia);
  t.equal(r.match('GET', `/v1/cdn/media/${TEAM}/tags`).handler.name, 'tags');
  const error = matchError(t, r, 'GET', `/v1/cdn/media/${TEAM}/tag`);
  t.equal(error.status, 404);
  t.match(error.message, /^There is no such route: GET /);
  t.end();
});
