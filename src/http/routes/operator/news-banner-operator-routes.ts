import type { NewsBannerService } from '../../../domain/news/news-banner.service.ts';
import { json, noContent, type Route } from '../../types.ts';
import type { OperatorRoute } from '../route-builder.ts';

/** The operator sets or removes any team's news banner (TeamNews of spec 2.16), archived teams included. */
export function newsBannerOperatorRoutes(route: OperatorRoute, banner: NewsBannerService): Route[] {
  return [
    route('PUT', '/v1/admin/teams/:teamId/news-banner', async (call) => {
      await banner.requireTeam(call.param('teamId'));
      return json(200, await banner.set(call.param('teamId'), await call.body(), null));
    }),
    route('DELETE', '/v1/admin/teams/:teamId/news-banner', async (call) => {
      await banner.requireTeam(call.param('teamId'));
      await banner.remove(call.param('teamId'), null);
      return noContent();
    }),
  ];
}
