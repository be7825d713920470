import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { announceAuthChange, type AuthCache } from '../../auth/auth-changes.ts';
import { generateApiKey } from '../../auth/api-key-secret.ts';
import { allPermissions } from '../../auth/permissions.ts';
import type { Principal } from '../../auth/principal.ts';
import { forbidden, notFound, unauthorized } from '../../errors/errors.ts';
import type { Caller } from '../members/member-admin.service.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { isUuid, parseInput } from '../validation.ts';
import { apiKeyInfoView, apiKeyView } from '../views.ts';
import { ApiKey } from './api-key.entity.ts';
import { createApiKeySchema } from './api-key.service.ts';

/** What a key linked to `member` (or to no member: the owner) may do: the member's permissions and its groups'. */
async function keyPermissions(em: EntityManager, member: TeamMember | null): Promise<readonly string[]> {
  if (!member || member.isTeamOwner) return allPermissions;
  const rows = await em.getConnection().execute<{ permission: string }[]>(
    `select unnest(m.permissions) as permission from team_member m where m.id = ?
     union select unnest(g.permissions) from team_member_group mg join team_group g on g.id = mg.group_id where mg.member_id = ?`,
    [member.id, member.id],
  );
  return rows.map((row) => row.permission);
}

/**
 * The team's API keys (spec 2.18) as the team manages them. A caller can only create, reroll or
 * delete a key whose permissions it holds itself, so team.apiKeys.manage is no way to a stronger key.
 */
export class ApiKeyAdminService {
  private readonly orm: MikroORM;
  private readonly authCache: AuthCache;

  constructor(options: { orm: MikroORM; authCache: AuthCache }) {
    this.orm = options.orm;
    this.authCache = options.authCache;
  }

  /** ApiKeyInfo of every key of the team, newest first; never a secret. */
  async list(teamId: string) {
    const keys = await this.orm.em.fork().find(ApiKey, { team: teamId }, { populate: ['teamMember'], orderBy: [{ createdAt: 'desc' }, { id: 'asc' }] });
    return keys.map((key) => apiKeyInfoView(key, key.teamMember ?? null));
  }

  /** The calling key as ApiKeyInfo, with what it may do (GET /v1/auth/key): how a key finds its team. */
  async describe(principal: Principal) {
    const apiKey = principal.keyId ? await this.orm.em.fork().findOne(ApiKey, { id: principal.keyId }, { populate: ['teamMember'] }) : null;
    // Deleted between the check of the key and this read.
    if (!apiKey) throw unauthorized('Invalid API key');
    return { ...apiKeyInfoView(apiKey, apiKey.teamMember ?? null), permissions: [...principal.permissions].sort() };
  }

  async create(teamId: string, input: unknown, caller: Caller) {
    const { description, teamMemberId, scopes = [] } = parseInput(createApiKeySchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const member = teamMemberId ? await em.findOne(TeamMember, { id: teamMemberId, team: teamId, leftTeamAt: null }) : null;
      if (teamMemberId && !member) throw notFound('team member', teamMemberId);
      await this.assertCallerHolds(em, caller, member);
      const generated = generateApiKey();
      const apiKey = em.create(ApiKey, {
        team: teamId, teamMember: member, description: description ?? null, prefix: generated.prefix, secretHash: generated.secretHash, scopes,
      });
      recordTeamLog(em, { teamId, action: LogAction.apiKeyCreated, teamMemberId: caller.teamMemberId, targetTeamMemberId: member?.id, targetIdentifier: apiKey.id });
      await em.flush();
      return apiKeyView(apiKey, member, generated.key);
    });
  }

  /** A new secret for a key of the team; the old one stops working on every instance at once. */
  async reroll(teamId: string, keyId: string, caller: Caller) {
    const view = await this.orm.em.fork().transactional(async (em) => {
      const apiKey = await this.find(em, teamId, keyId, caller);
      const generated = generateApiKey();
      apiKey.prefix = generated.prefix;
      apiKey.secretHash = generated.secretHash;
      apiKey.updatedAt = new Date();
      await em.flush();
      await announceAuthChange(em, teamId);
      return apiKeyView(apiKey, apiKey.teamMember ?? null, generated.key);
    });
    this.authCache.invalidateTeam(teamId);
    return view;
  }

  async delete(teamId: string, keyId: string, caller: Caller): Promise<void> {
    await this.orm.em.fork().transactional(async (em) => {
      const apiKey = await this.find(em, teamId, keyId, caller);
      recordTeamLog(em, {
        teamId, action: LogAction.apiKeyDeleted, teamMemberId: caller.teamMemberId, targetTeamMemberId: apiKey.teamMember?.id,
        targetIdentifier: apiKey.id, data: { description: apiKey.description },
      });
      em.remove(apiKey);
      await em.flush();
      await announceAuthChange(em, teamId);
    });
    this.authCache.invalidateTeam(teamId);
  }

  private async find(em: EntityManager, teamId: string, keyId: string, caller: Caller): Promise<ApiKey> {
    const apiKey = isUuid(keyId) ? await em.findOne(ApiKey, { id: keyId, team: teamId }, { populate: ['teamMember'] }) : null;
    if (!apiKey) throw notFound('API key', keyId);
    await this.assertCallerHolds(em, caller, apiKey.teamMember ?? null);
    return apiKey;
  }

  private async assertCallerHolds(em: EntityManager, caller: Caller, member: TeamMember | null): Promise<void> {
    const missing = (await keyPermissions(em, member)).find((name) => !caller.permissions.has(name));
    if (missing) throw forbidden(`The key would have a permission the caller does not hold: ${missing}`, missing);
  }
}
