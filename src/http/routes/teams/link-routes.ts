import { Permission } from '../../../auth/permissions.ts';
import type { LinkService } from '../../../domain/links/link.service.ts';
import { json, noContent, type Route } from '../../types.ts';
import type { TeamRoute } from '../route-builder.ts';

/** Links (spec 2.16): every full key reads them, team.links.manage creates, changes and deletes. */
export function linkRoutes(route: TeamRoute, links: LinkService): Route[] {
  return [
    route('GET', '/links', null, async (call) => json(200, await links.list(call.teamId))),
    route('POST', '/links', Permission.linksManage, async (call) => json(201, await links.create(call.teamId, await call.body()))),
    route('GET', '/links/:linkId', null, async (call) => json(200, await links.get(call.teamId, call.param('linkId')))),
    route('PATCH', '/links/:linkId', Permission.linksManage, async (call) => json(200, await links.update(call.teamId, call.param('linkId'), await call.body()))),
    route('DELETE', '/links/:linkId', Permission.linksManage, async (call) => {
      await links.delete(call.teamId, call.param('linkId'));
      return noContent();
    }),
  ];
}
