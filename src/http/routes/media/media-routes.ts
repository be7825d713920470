import { Permission } from '../../../auth/permissions.ts';
import { parseListFilters, type MediaService } from '../../../domain/media/media.service.ts';
import { readPaging } from '../../paging.ts';
import { json, type Route } from '../../types.ts';
import { MEDIA_BASE, teamRouteBuilder, type TeamRouteDeps } from '../route-builder.ts';

export interface MediaRouteDeps extends TeamRouteDeps {
  media: MediaService;
}

/** The media routes of spec 4.1 that exist so far. */
export function mediaRoutes(deps: MediaRouteDeps): Route[] {
  // The list reads no body.
  const route = teamRouteBuilder(deps, 0, MEDIA_BASE);
  return [
    route('GET', '', Permission.mediaView, async (call) => {
      const paging = readPaging(call.request);
      const filters = parseListFilters(call.request.query);
      return json(200, await deps.media.list(call.teamId, paging, filters));
    }),
  ];
}
