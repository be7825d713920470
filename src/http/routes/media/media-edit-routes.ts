import type { Config } from '../../../config/config.ts';
import type { Services } from '../../../app.ts';
import { Permission } from '../../../auth/permissions.ts';
import type { DeletionLinks } from '../../../domain/media/deletion-links.ts';
import { bulkPermission } from '../../../domain/media/media-edit.service.ts';
import { forbidden } from '../../../errors/errors.ts';
import { ServiceError } from '../../../errors/service-error.ts';
import { createLogger, type Logger } from '../../../logging/logger.ts';
import { authorizeMedia, type MediaGrant } from '../../guards.ts';
import { deletionLinkRoutes } from './deletion-link-routes.ts';
import { json, type HttpRequest, type Route } from '../../types.ts';

const edit = { permission: Permission.mediaEdit };
const remove = { permission: Permission.mediaDelete };

/**
 * Spec 4.6-4.8: update, delete and bulk actions on media files.
 *
 * Edits go through `services.mediaEdits`, which logs failed object removals and CDN purges (`logger`
 * is no longer used). With `deletionLinks`, the deletion links' routes (deletion-link-routes.ts)
 * delete through the same service.
 */
export function mediaEditRoutes(
  services: Services, config: Config, logger: Logger = createLogger(config.logLevel), deletionLinks: DeletionLinks | null = null,
): Route[] {
  const edits = services.mediaEdits;
  const base = '/v1/cdn/media/:teamId';

  /**
   * Bulk needs edit or delete depending on the action in the body. The key,
   * its team and "edit or delete at all" are checked before the body is read;
   * the action's own permission right after (403), before anything is changed.
   */
  async function authorizeEditOrDelete(request: HttpRequest): Promise<MediaGrant> {
    try {
      return await authorizeMedia(request, services, edit);
    } catch (error) {
      if (error instanceof ServiceError && error.status === 403) return authorizeMedia(request, services, remove);
      throw error;
    }
  }

  return [
    {
      method: 'PATCH',
      pattern: `${base}/update/:mediaId`,
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, services, edit);
        const body = await request.body.json(config.maxJsonBodyBytes);
        return json(200, await edits.update(principal.teamId, request.params['mediaId'] ?? '', body), headers);
      },
    },
    {
      method: 'DELETE',
      pattern: `${base}/delete/:mediaId`,
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, services, remove);
        return json(200, await edits.delete(principal.teamId, request.params['mediaId'] ?? ''), headers);
      },
    },
    {
      method: 'POST',
      pattern: `${base}/bulk`,
      handler: async (request) => {
        const { principal, headers } = await authorizeEditOrDelete(request);
        const body = await request.body.json(config.maxJsonBodyBytes);
        const required = bulkPermission(body);
        if (!principal.permissions.has(required)) throw forbidden(`Missing permission ${required}`, required);
        return json(200, await edits.bulk(principal.teamId, principal.permissions, body), headers);
      },
    },
    ...(deletionLinks ? deletionLinkRoutes({ orm: services.orm, links: deletionLinks, edits }) : []),
  ];
}
