import { badRequest, methodNotAllowed, routeNotFound } from '../errors/errors.ts';
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

function splitPath(path: string): string[] {
  return path.split('/').filter((segment) => segment.length > 0);
}

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
    for (const compiled of this.routes) {
      const params = matchSegments(compiled.segments, segments);
      if (!params) continue;
      if (compiled.route.method === method || (method === 'HEAD' && compiled.route.method === 'GET')) {
        return { handler: compiled.route.handler, pattern: compiled.route.pattern, params };
      }
      allowed.add(compiled.route.method);
    }
    if (allowed.size > 0) throw methodNotAllowed(method, path, [...allowed]);
    throw routeNotFound(path);
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
