import type { Config } from '../../../config/config.ts';
import type { Services } from '../../../app.ts';
import type { Route } from '../../types.ts';

/** Spec 4.5 and the files themselves: links, signed links, and serving `/media/team/<teamId>/<file>`. */
export function fileServingRoutes(_services: Services, _config: Config): Route[] {
  return [];
}
