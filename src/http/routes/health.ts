import { serviceUnavailable } from '../../errors/errors.ts';
import { ServiceError } from '../../errors/service-error.ts';
import { json, type Route } from '../types.ts';
import { publicRouteBuilder } from './route-builder.ts';

/** How soon a load balancer may ask again while a dependency is down. */
const RETRY_AFTER_SECONDS = 5;

export type Lifecycle = 'starting' | 'ready' | 'draining';

/** A dependency's state: null while it is usable, else why not. */
export type DependencyProblems = () => Record<string, string | null>;

/**
 * GET /healthz: 200 `{status: 'ok', dependencies: {storage: 'ok'}}` once requests are accepted;
 * 503 (spec error body) while starting or draining, or while a dependency is down: then `value`
 * names the dependencies that are down and `message` says why.
 */
export function healthRoutes(state: () => Lifecycle, dependencies: DependencyProblems = () => ({})): Route[] {
  const route = publicRouteBuilder();
  return [
    route('GET', '/healthz', () => {
      const current = state();
      if (current !== 'ready') throw serviceUnavailable(`The service is ${current}`);
      const problems = Object.entries(dependencies());
      const down = problems.filter(([, problem]) => problem !== null);
      if (down.length > 0) {
        throw new ServiceError({
          name: 'ServiceUnavailableError',
          status: 503,
          messageKey: 'error.serviceUnavailable',
          message: `Unavailable: ${down.map(([name, problem]) => `${name} (${problem})`).join('; ')}`,
          value: down.map(([name]) => name).join(','),
          headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
        });
      }
      return json(200, { status: 'ok', dependencies: Object.fromEntries(problems.map(([name]) => [name, 'ok'])) });
    }),
  ];
}
