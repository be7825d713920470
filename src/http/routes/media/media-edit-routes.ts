import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../../../config/config.ts';
import { Permission } from '../../../auth/permissions.ts';
import { createCdnPurger } from '../../../domain/media/cdn-purge.ts';
import type { DeletionLinks } from '../../../domain/media/deletion-links.ts';
import { bulkPermission, MediaEditService } from '../../../domain/media/media-edit.service.ts';
import type { MediaService } from '../../../domain/media/media.service.ts';
import { forbidden } from '../../../errors/errors.ts';
import { ServiceError } from '../../../errors/service-error.ts';
import { createLogger, type Logger } from '../../../logging/logger.ts';
import type { ObjectStore } from '../../../storage/object-store.ts';
import { authorizeTeamCaller } from '../../guards.ts';
import { json, type Route } from '../../types.ts';
import { MEDIA_BASE, teamGrant, teamRouteBuilder, type TeamGuard, type TeamRouteDeps } from '../route-builder.ts';
import { deletionLinkRoutes } from './deletion-link-routes.ts';

export interface MediaEditRouteDeps extends TeamRouteDeps {
  orm: MikroORM;
  store: ObjectStore;
  media: MediaService;
}

type MediaEditConfig = Pick<Config, 'maxJsonBodyBytes' | 'logLevel' | 'cdnPurgeUrl' | 'cdnUrl' | 'publicUrl'>;

/**
 * Spec 4.6-4.8: update, delete and bulk actions on media files.
 *
 * `logger` receives failed object removals and CDN purges; without one the
 * routes log through their own logger at the configured level. With `deletionLinks`, the deletion
 * links' routes (deletion-link-routes.ts) delete through the same service.
 */
export function mediaEditRoutes(
  deps: MediaEditRouteDeps, config: MediaEditConfig, logger: Logger = createLogger(config.logLevel), deletionLinks: DeletionLinks | null = null,
): Route[] {
  const log = logger.child({ component: 'media-edit' });
  const edits = new MediaEditService({
    orm: deps.orm,
    store: deps.store,
    media: deps.media,
    purger: createCdnPurger(config.cdnPurgeUrl, log),
    linkBaseUrl: config.cdnUrl ?? config.publicUrl,
    logger: log,
  });
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
