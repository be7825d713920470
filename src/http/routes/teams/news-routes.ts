import { Permission } from '../../../auth/permissions.ts';
import type { NewsBannerService } from '../../../domain/news/news-banner.service.ts';
import { type NewsReader, type NewsService, parseNewsFilters } from '../../../domain/news/news.service.ts';
import { readPaging } from '../../paging.ts';
import { json, noContent, type Route } from '../../types.ts';
import type { TeamCall, TeamRoute } from '../route-builder.ts';

const readerOf = (call: TeamCall): NewsReader => ({ editor: call.principal.permissions.has(Permission.newsManage), memberId: call.principal.memberId });

/**
 * News (spec 2.16): every full key reads what is published for it, team.news.manage writes,
 * publishes and reads drafts. The news banner: every full key reads it, the owner sets it.
 */
export function newsRoutes(route: TeamRoute, news: NewsService, banner: NewsBannerService): Route[] {
  return [
    route('GET', '/news', null, async (call) =>
      json(200, await news.list(call.teamId, readerOf(call), parseNewsFilters(call.request.query), readPaging(call.request)))),
    route('POST', '/news', Permission.newsManage, async (call) => json(201, await news.create(call.teamId, await call.body(), call.actor.teamMemberId))),
    route('GET', '/news/:newsId', null, async (call) => json(200, await news.get(call.teamId, call.param('newsId'), readerOf(call)))),
    route('PATCH', '/news/:newsId', Permission.newsManage, async (call) => json(200, await news.update(call.teamId, call.param('newsId'), await call.body()))),
    route('DELETE', '/news/:newsId', Permission.newsManage, async (call) => {
      await news.delete(call.teamId, call.param('newsId'));
      return noContent();
    }),
    route('POST', '/news/:newsId/publish', Permission.newsManage, async (call) => json(200, await news.publish(call.teamId, call.param('newsId')))),
    route('POST', '/news/:newsId/unpublish', Permission.newsManage, async (call) => json(200, await news.unpublish(call.teamId, call.param('newsId')))),
    route('GET', '/news-banner', null, async (call) => {
      const current = await banner.get(call.teamId);
      return current ? json(200, current) : noContent();
    }),
    route('PUT', '/news-banner', null, async (call) => json(200, await banner.set(call.teamId, await call.body(), call.principal.memberId))),
    route('DELETE', '/news-banner', null, async (call) => {
      await banner.remove(call.teamId, call.principal.memberId);
      return noContent();
    }),
  ];
}
