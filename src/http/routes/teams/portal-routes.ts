import { Permission } from '../../../auth/permissions.ts';
import type { PortalDomainService } from '../../../domain/portal/portal-domain.service.ts';
import type { PortalPages } from '../../../domain/portal/portal-pages.ts';
import type { PortalService } from '../../../domain/portal/portal.service.ts';
import type { RequestRateLimiter } from '../../../limits/rate-limiter.ts';
import { json, type Route } from '../../types.ts';
import type { PublicRoute, TeamRoute } from '../route-builder.ts';

/** The team's portal environment (spec 2.20): every full key reads it, team.portal.manage sets it up and changes it and its custom domain. */
export function portalRoutes(route: TeamRoute, portal: PortalService, domains: PortalDomainService): Route[] {
  return [
    route('GET', '/portal', null, async (call) => json(200, await portal.get(call.teamId))),
    route('POST', '/portal', Permission.portalManage, async (call) => json(201, await portal.create(call.teamId, await call.body()))),
    route('PATCH', '/portal', Permission.portalManage, async (call) => json(200, await portal.update(call.teamId, await call.body()))),
    route('GET', '/portal/domain', Permission.portalManage, async (call) => json(200, await domains.status(call.teamId))),
    route('PUT', '/portal/domain', Permission.portalManage, async (call) => json(200, await domains.set(call.teamId, await call.body()))),
    route('POST', '/portal/domain/verify', Permission.portalManage, async (call) => json(200, await domains.verify(call.teamId))),
    route('DELETE', '/portal/domain', Permission.portalManage, async (call) => json(200, await domains.remove(call.teamId))),
  ];
}

/** A portal's public pages, without a key, limited per client address by the API's rate limit. */
export function portalPageRoutes(publicRoute: PublicRoute, pages: PortalPages, rateLimiter: RequestRateLimiter): Route[] {
  return [
    publicRoute('GET', '/v1/portals/:portal', async (call) => {
      const headers = await rateLimiter.consume(`portal:${call.request.remoteAddress}`);
      return json(200, await pages.portal(call.param('portal')), headers);
    }),
    publicRoute('GET', '/v1/portals/:portal/team', async (call) => {
      const headers = await rateLimiter.consume(`portal:${call.request.remoteAddress}`);
      return json(200, await pages.teamOverview(call.param('portal')), headers);
    }),
  ];
}
