import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../../../config/config.ts';
import { Permission } from '../../../auth/permissions.ts';
import type { DeletionLinks } from '../../../domain/media/deletion-links.ts';
import { bulkPermission, type MediaEditService } from '../../../domain/media/media-edit.service.ts';
import { forbidden } from '../../../errors/errors.ts';
import { ServiceError } from '../../../errors/service-error.ts';
import { authorizeTeamCaller } from '../../guards.ts';
import { json, type Route } from '../../types.ts';
import { MEDIA_BASE, teamGrant, teamRouteBuilder, type TeamGuard, type TeamRouteDeps } from '../route-builder.ts';
import { deletionLinkRoutes } from './deletion-link-routes.ts';

export interface MediaEditRouteDeps extends TeamRouteDeps {
  orm: MikroORM;
  /** Edits and deletes (it logs failed object removals and CDN purges itself). */
  mediaEdits: MediaEditService;
}

type MediaEditConfig = Pick<Config, 'maxJsonBodyBytes'>;

/**
 * Spec 4.6-4.8: update, delete and bulk actions on media files.
 *
 * With `deletionLinks`, the deletion links' routes (deletion-link-routes.ts) delete through the same service.
 */
export function mediaEditRoutes(
  deps: MediaEditRouteDeps, config: MediaEditConfig, deletionLinks: DeletionLinks | null = null,
): Route[] {
  const edits = deps.mediaEdits;
  const route = teamRouteBuilder(deps, config.maxJsonBodyBytes, MEDIA_BASE);

  /**
   * Bulk needs edit or delete depending on the action in the body. The key,
   * its team and "edit or delete at all" are checked before the body is read;
   * the action's own permission right after (403), before anything is changed.
   */
  const editOrDelete: TeamGuard = async (request) => {
    try {
      return teamGrant(await authorizeTeamCaller(request, deps, { permission: Permission.mediaEdit }));
    } catch (error) {
      if (error instanceof ServiceError && error.status === 403) return teamGrant(await authorizeTeamCaller(request, deps, { permission: Permission.mediaDelete }));
      throw error;
    }
  };

  return [
    route('PATCH', '/update/:mediaId', Permission.mediaEdit, async (call) => {
      const body = await call.body();
      return json(200, await edits.update(call.teamId, call.param('mediaId'), body));
    }),
    route('DELETE', '/delete/:mediaId', Permission.mediaDelete, async (call) => json(200, await edits.delete(call.teamId, call.param('mediaId')))),
    route('POST', '/bulk', editOrDelete, async (call) => {
      const body = await call.body();
      const required = bulkPermission(body);
      if (!call.principal.permissions.has(required)) throw forbidden(`Missing permission ${required}`, required);
      return json(200, await edits.bulk(call.teamId, call.principal.permissions, body));
    }),
    ...(deletionLinks ? deletionLinkRoutes({ orm: deps.orm, links: deletionLinks, edits }) : []),
  ];
}
