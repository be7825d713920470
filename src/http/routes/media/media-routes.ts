import type { Authenticator } from '../../../auth/authenticator.ts';
import { Permission } from '../../../auth/permissions.ts';
import { parseListFilters, type MediaService } from '../../../domain/media/media.service.ts';
import type { RequestRateLimiter } from '../../../limits/rate-limiter.ts';
import { authorizeMedia } from '../../guards.ts';
import { readPaging } from '../../paging.ts';
import { json, type Route } from '../../types.ts';

export interface MediaRouteDeps {
  authenticator: Authenticator;
  rateLimiter: RequestRateLimiter;
  media: MediaService;
}

/** The media routes of spec 4.1 that exist so far. */
export function mediaRoutes(deps: MediaRouteDeps): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/v1/cdn/media/:teamId',
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, deps, { permission: Permission.mediaView });
        const paging = readPaging(request);
        const filters = parseListFilters(request.query);
        return json(200, await deps.media.list(principal.teamId, paging, filters), headers);
      },
    },
  ];
}
