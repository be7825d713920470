import { badRequest, invalidTeamId, methodNotAllowed, routeNotFound } from '../errors/errors.ts';
import { isUuid } from '../domain/validation.ts';
import type { Handler, Route } from './types.ts';

interface CompiledRoute {
  route: Route;
  segments: string[];
  /** Static segments come before parameters at the first place two routes differ. */
  rank: string;
}

export interface RouteMatch {
  handler: Handler;
  /** The matched route's pattern, e.g. '/v1/cdn/media/:teamId' (a bounded metrics label). */
  pattern: string;
  params: Record<string, string>;
}

/**
 * One trailing slash is ignored (/docs/ is /docs). An empty segment elsewhere is kept: /v1/cdn/media//upload
 * names an empty team id, instead of turning into /v1/cdn/media/upload (team "upload", method not allowed).
 */
function splitPath(path: string): string[] {
  const trimmed = path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed === '' ? [] : trimmed.slice(1).split('/');
}

/**
 * Path parameters that are always UUIDs. A path with anything else there is mistyped: a team id is
 * named in a 404 (rather than a 401 "key does not belong to this team"), and a segment in the place of
 * a media id matches no route (GET /v1/cdn/media/{teamId}/list is not a lookup of file "list").
 */
const TEAM_ID_PARAM = 'teamId';
const UUID_PARAMS = [TEAM_ID_PARAM, 'mediaId'];

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest('The request path is not valid percent-encoding.');
  }
}

/**
 * A small table router. It exists beside uWS's own so that one place can tell
 * 404 (no such path) from 405 (path exists, method does not) and rank static
 * segments above parameters regardless of registration order.
 */
export class Router {
  private readonly routes: CompiledRoute[] = [];

  add(route: Route): void {
    const segments = splitPath(route.pattern);
    const rank = segments.map((segment) => (segment.startsWith(':') ? '1' : '0')).join('');
    this.routes.push({ route, segments, rank });
    this.routes.sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));
  }

  /** The registered routes' methods and patterns (the API description is checked against these). */
  list(): { method: Route['method']; pattern: string }[] {
    return this.routes.map(({ route }) => ({ method: route.method, pattern: route.pattern }));
  }

  match(method: string, path: string): RouteMatch {
    const segments = splitPath(path);
    const allowed = new Set<string>();
    let invalidTeam: string | undefined;
    for (const compiled of this.routes) {
      const params = matchSegments(compiled.segments, segments);
      if (!params) continue;
      const notUuid = UUID_PARAMS.find((name) => params[name] !== undefined && !isUuid(params[name]));
      if (notUuid !== undefined) {
        if (notUuid === TEAM_ID_PARAM) invalidTeam ??= params[TEAM_ID_PARAM];
        continue;
      }
      if (compiled.route.method === method || (method === 'HEAD' && compiled.route.method === 'GET')) {
        return { handler: compiled.route.handler, pattern: compiled.route.pattern, params };
      }
      allowed.add(compiled.route.method);
    }
    if (allowed.size > 0) throw methodNotAllowed(method, path, [...allowed]);
    if (invalidTeam !== undefined) throw invalidTeamId(invalidTeam);
    throw routeNotFound(method, path);
  }
}

function matchSegments(pattern: string[], segments: string[]): Record<string, string> | null {
  if (pattern.length !== segments.length) return null;
  const params: Record<string, string> = {};
  for (let index = 0; index < pattern.length; index++) {
    const expected = pattern[index]!;
    const actual = segments[index]!;
    if (expected.startsWith(':')) params[expected.slice(1)] = decodeSegment(actual);
    else if (expected !== actual) return null;
  }
  return params;
}
