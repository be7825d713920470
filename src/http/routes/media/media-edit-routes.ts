import type { Config } from '../../../config/config.ts';
import type { Services } from '../../../app.ts';
import type { Route } from '../../types.ts';

/** Spec 4.6-4.8: update, delete and bulk actions on media files. */
export function mediaEditRoutes(_services: Services, _config: Config): Route[] {
  return [];
}
