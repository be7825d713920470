import type { Config } from '../../../config/config.ts';
import { Permission } from '../../../auth/permissions.ts';
import type { FolderService } from '../../../domain/folders/folder.service.ts';
import { json, type Route } from '../../types.ts';
import { MEDIA_BASE, teamRouteBuilder, type TeamRouteDeps } from '../route-builder.ts';

export interface FolderRouteDeps extends TeamRouteDeps {
  folders: FolderService;
}

/** Spec 4.9: the media folder routes. */
export function folderRoutes(deps: FolderRouteDeps, config: Pick<Config, 'maxJsonBodyBytes'>): Route[] {
  const { folders } = deps;
  const route = teamRouteBuilder(deps, config.maxJsonBodyBytes, `${MEDIA_BASE}/folders`);

  return [
    route('GET', '', Permission.mediaView, async (call) => json(200, { folders: await folders.list(call.teamId) })),
    route('POST', '', Permission.mediaEdit, async (call) => {
      const body = await call.body();
      return json(201, await folders.create(call.teamId, body));
    }),
    route('PATCH', '/:folderId', Permission.mediaEdit, async (call) => {
      const body = await call.body();
      return json(200, await folders.update(call.teamId, call.param('folderId'), body));
    }),
    route('DELETE', '/:folderId', Permission.mediaEdit, async (call) => json(200, await folders.delete(call.teamId, call.param('folderId')))),
  ];
}
