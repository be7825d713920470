import { Permission } from '../../../auth/permissions.ts';
import type { ApiKeyAdminService } from '../../../domain/api-keys/api-key-admin.service.ts';
import { json, noContent, type Route } from '../../types.ts';
import { callerOf, type TeamRoute } from '../route-builder.ts';

/** The team's API keys (spec 2.18), all behind team.apiKeys.manage. */
export function apiKeyRoutes(route: TeamRoute, keys: ApiKeyAdminService): Route[] {
  return [
    route('GET', '/api-keys', Permission.apiKeysManage, async (call) => json(200, await keys.list(call.teamId))),
    route('POST', '/api-keys', Permission.apiKeysManage, async (call) => json(201, await keys.create(call.teamId, await call.body(), callerOf(call)))),
    route('POST', '/api-keys/:keyId/reroll', Permission.apiKeysManage, async (call) => json(200, await keys.reroll(call.teamId, call.param('keyId'), callerOf(call)))),
    // Revoking a key is always possible, archived or not.
    route('DELETE', '/api-keys/:keyId', Permission.apiKeysManage, async (call) => {
      await keys.delete(call.teamId, call.param('keyId'), callerOf(call));
      return noContent();
    }, { whileArchived: true }),
  ];
}
