import type { Config } from '../../../config/config.ts';
import type { Services } from '../../../app.ts';
import type { Route } from '../../types.ts';

/** Spec 4.4, 4.10: tags in use and usage. */
export function libraryRoutes(_services: Services, _config: Config): Route[] {
  return [];
}
