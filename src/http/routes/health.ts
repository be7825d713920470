import { serviceUnavailable } from '../../errors/errors.ts';
import { json, type Route } from '../types.ts';

export type Lifecycle = 'starting' | 'ready' | 'draining';

/** GET /healthz: 200 once requests are accepted, 503 while starting or draining. */
export function healthRoutes(state: () => Lifecycle): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/healthz',
      handler: () => {
        const current = state();
        if (current !== 'ready') throw serviceUnavailable(`The service is ${current}`);
        return json(200, { status: 'ok' });
      },
    },
  ];
}
