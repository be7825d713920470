import type { MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { announceAuthChange, type AuthCache } from '../../auth/auth-changes.ts';
import { generateApiKey } from '../../auth/api-key-secret.ts';
import { allScopes } from '../../auth/permissions.ts';
import { notFound } from '../../errors/errors.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { apiKeyView } from '../views.ts';
import { ApiKey } from './api-key.entity.ts';

export const createApiKeySchema = z.strictObject({
  description: z.string().max(255).optional(),
  teamMemberId: uuid.optional(),
  scopes: z
    .array(z.enum(allScopes as [string, ...string[]], { message: `must be one of ${allScopes.join(', ')}` }))
    .max(allScopes.length)
    .transform((scopes) => [...new Set(scopes)])
    .optional(),
});

export class ApiKeyService {
  private readonly orm: MikroORM;
  private readonly authCache: AuthCache;

  constructor(options: { orm: MikroORM; authCache: AuthCache }) {
    this.orm = options.orm;
    this.authCache = options.authCache;
  }

  async create(teamId: string, input: unknown) {
    const { description, teamMemberId, scopes = [] } = parseInput(createApiKeySchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const team = isUuid(teamId) ? await em.findOne(Team, { id: teamId }) : null;
      if (!team) throw notFound('team', teamId);
      const member = teamMemberId ? await em.findOne(TeamMember, { id: teamMemberId, team }) : null;
      if (teamMemberId && !member) throw notFound('team member', teamMemberId);
      const generated = generateApiKey();
      const apiKey = em.create(ApiKey, {
        team,
        teamMember: member,
        description: description ?? null,
        prefix: generated.prefix,
        secretHash: generated.secretHash,
        scopes,
      });
      recordTeamLog(em, { teamId, action: LogAction.apiKeyCreated, targetTeamMemberId: member?.id, targetIdentifier: apiKey.id });
      return apiKeyView(apiKey, member, generated.key);
    });
  }

  /** Replaces the key's secret; the old secret stops working on every instance at once. */
  async reroll(keyId: string) {
    const result = await this.orm.em.fork().transactional(async (em) => {
      const apiKey = isUuid(keyId) ? await em.findOne(ApiKey, { id: keyId }, { populate: ['teamMember'] }) : null;
      if (!apiKey) throw notFound('API key', keyId);
      const generated = generateApiKey();
      apiKey.prefix = generated.prefix;
      apiKey.secretHash = generated.secretHash;
      apiKey.updatedAt = new Date();
      await em.flush();
      await announceAuthChange(em, apiKey.team.id);
      return { teamId: apiKey.team.id, view: apiKeyView(apiKey, apiKey.teamMember ?? null, generated.key) };
    });
    this.authCache.invalidateTeam(result.teamId);
    return result.view;
  }

  async delete(keyId: string): Promise<void> {
    const teamId = await this.orm.em.fork().transactional(async (em) => {
      const apiKey = isUuid(keyId) ? await em.findOne(ApiKey, { id: keyId }) : null;
      if (!apiKey) throw notFound('API key', keyId);
      const teamId = apiKey.team.id;
      recordTeamLog(em, { teamId, action: LogAction.apiKeyDeleted, targetIdentifier: apiKey.id, data: { description: apiKey.description } });
      em.remove(apiKey);
      await em.flush();
      await announceAuthChange(em, teamId);
      return teamId;
    });
    this.authCache.invalidateTeam(teamId);
  }
}
