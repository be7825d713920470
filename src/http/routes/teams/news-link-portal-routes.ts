import type { LinkService } from '../../../domain/links/link.service.ts';
import type { NewsBannerService } from '../../../domain/news/news-banner.service.ts';
import type { NewsService } from '../../../domain/news/news.service.ts';
import type { PortalDomainService } from '../../../domain/portal/portal-domain.service.ts';
import type { PortalPages } from '../../../domain/portal/portal-pages.ts';
import type { PortalService } from '../../../domain/portal/portal.service.ts';
import type { Route } from '../../types.ts';
import { newsBannerOperatorRoutes } from '../operator/news-banner-operator-routes.ts';
import { operatorRouteBuilder, publicRouteBuilder, teamRouteBuilder, type OperatorRouteDeps, type TeamRouteDeps } from '../route-builder.ts';
import { linkRoutes } from './link-routes.ts';
import { newsRoutes } from './news-routes.ts';
import { portalPageRoutes, portalRoutes } from './portal-routes.ts';

export interface NewsLinkPortalRouteDeps extends TeamRouteDeps, Pick<OperatorRouteDeps, 'authFailures'> {
  news: NewsService;
  newsBanner: NewsBannerService;
  links: LinkService;
  portal: PortalService;
  portalDomains: PortalDomainService;
  portalPages: PortalPages;
}

/** News, the news banner, links and the portal (docs/workspace.md, "News, banners, links and the portal"). */
export function newsLinkPortalRoutes(deps: NewsLinkPortalRouteDeps, config: { maxJsonBodyBytes: number; authSecret: string }): Route[] {
  const route = teamRouteBuilder(deps, config.maxJsonBodyBytes);
  const operatorRoute = operatorRouteBuilder({ authSecret: config.authSecret, authFailures: deps.authFailures }, config.maxJsonBodyBytes);
  return [
    ...newsRoutes(route, deps.news, deps.newsBanner),
    ...linkRoutes(route, deps.links),
    ...portalRoutes(route, deps.portal, deps.portalDomains),
    ...portalPageRoutes(publicRouteBuilder(), deps.portalPages, deps.rateLimiter),
    ...newsBannerOperatorRoutes(operatorRoute, deps.newsBanner),
  ];
}
