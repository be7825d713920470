import type { Config } from '../../../config/config.ts';
import type { Services } from '../../../app.ts';
import { Permission } from '../../../auth/permissions.ts';
import { authorizeMedia } from '../../guards.ts';
import { json, type Route } from '../../types.ts';

const view = { permission: Permission.mediaView };
const edit = { permission: Permission.mediaEdit };

/** Spec 4.9: the media folder routes. */
export function folderRoutes(services: Services, config: Config): Route[] {
  const { folders } = services;
  const base = '/v1/cdn/media/:teamId/folders';

  return [
    {
      method: 'GET',
      pattern: base,
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, services, view);
        return json(200, { folders: await folders.list(principal.teamId) }, headers);
      },
    },
    {
      method: 'POST',
      pattern: base,
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, services, edit);
        const body = await request.body.json(config.maxJsonBodyBytes);
        return json(201, await folders.create(principal.teamId, body), headers);
      },
    },
    {
      method: 'PATCH',
      pattern: `${base}/:folderId`,
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, services, edit);
        const body = await request.body.json(config.maxJsonBodyBytes);
        return json(200, await folders.update(principal.teamId, request.params['folderId'] ?? '', body), headers);
      },
    },
    {
      method: 'DELETE',
      pattern: `${base}/:folderId`,
      handler: async (request) => {
        const { principal, headers } = await authorizeMedia(request, services, edit);
        return json(200, await folders.delete(principal.teamId, request.params['folderId'] ?? ''), headers);
      },
    },
  ];
}
