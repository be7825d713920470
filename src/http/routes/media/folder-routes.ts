import type { Config } from '../../../config/config.ts';
import type { Services } from '../../../app.ts';
import type { Route } from '../../types.ts';

/** Spec 4.9: the media folder routes. */
export function folderRoutes(_services: Services, _config: Config): Route[] {
  return [];
}
