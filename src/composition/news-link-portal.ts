import type { MikroORM } from '@mikro-orm/postgresql';
import { LinkService } from '../domain/links/link.service.ts';
import { NewsBannerService } from '../domain/news/news-banner.service.ts';
import { NewsService } from '../domain/news/news.service.ts';
import { PortalDomainService } from '../domain/portal/portal-domain.service.ts';
import { PortalPages } from '../domain/portal/portal-pages.ts';
import { PortalService } from '../domain/portal/portal.service.ts';
import { systemTxtResolver, type TxtResolver } from '../domain/portal/txt-resolver.ts';

/** News, the news banner, links and the portal (docs/workspace.md). */
export interface NewsLinkPortalServices {
  news: NewsService;
  newsBanner: NewsBannerService;
  links: LinkService;
  portal: PortalService;
  /** Custom portal domains; their TXT lookups go through the resolver of ComposeOptions (the system's by default). */
  portalDomains: PortalDomainService;
  /** A portal's public pages. */
  portalPages: PortalPages;
}

export function composeNewsLinkPortal(options: { orm: MikroORM; txtResolver?: TxtResolver }): NewsLinkPortalServices {
  const { orm } = options;
  return {
    news: new NewsService({ orm }),
    newsBanner: new NewsBannerService({ orm }),
    links: new LinkService({ orm }),
    portal: new PortalService({ orm }),
    portalDomains: new PortalDomainService({ orm, resolver: options.txtResolver ?? systemTxtResolver() }),
    portalPages: new PortalPages({ orm }),
  };
}
