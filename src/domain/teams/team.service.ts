import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { generateApiKey } from '../../auth/api-key-secret.ts';
import { allPermissions } from '../../auth/permissions.ts';
import { badRequest, notFound } from '../../errors/errors.ts';
import { ApiKey } from '../api-keys/api-key.entity.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import type { Paging } from '../paging.ts';
import { Plan } from '../plans/plan.entity.ts';
import type { PlanLimits } from '../plans/plan-limits.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { createPlaceholderUser } from '../users/user.factory.ts';
import { isUuid, parseInput } from '../validation.ts';
import { apiKeyInfoView, apiKeyView, teamMemberView, teamView } from '../views.ts';
import { effectiveLimits, limitsPatchSchema } from './team-limits.ts';
import { Team } from './team.entity.ts';

export const createTeamSchema = z.strictObject({
  name: z.string().trim().min(2).max(24),
  plan: z.string().min(1).max(32).optional().meta({
    description: 'The plan\'s slug (free, enterprise, or another plan of the service); without it, the DEFAULT_PLAN setting (free unless set).',
  }),
});

export const OWNER_MEMBER_NAME = 'Owner';

export interface TeamStorageState {
  limits: PlanLimits;
  usedStorage: number;
  reservedStorage: number;
  /** The team setting: uploads that do not say `stripMetadata` have their images' metadata stripped. */
  stripMetadata: boolean;
}

export class TeamService {
  private readonly orm: MikroORM;
  private readonly defaultPlan: string;

  /** `defaultPlan`: DEFAULT_PLAN, the plan of a team created without one. */
  constructor(options: { orm: MikroORM; defaultPlan: string }) {
    this.orm = options.orm;
    this.defaultPlan = options.defaultPlan;
  }

  /** A new team with its owner and a first API key, which acts as the owner. */
  async createTeam(input: unknown) {
    const { name, plan: planSlug = this.defaultPlan } = parseInput(createTeamSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const plan = await em.findOne(Plan, { slug: planSlug });
      if (!plan) throw badRequest(`Unknown plan: ${planSlug}`, planSlug);
      const team = em.create(Team, { name, plan });
      const owner = em.create(TeamMember, {
        team,
        user: createPlaceholderUser(em),
        name: OWNER_MEMBER_NAME,
        permissions: [...allPermissions],
        isTeamOwner: true,
      });
      const generated = generateApiKey();
      const apiKey = em.create(ApiKey, {
        team,
        description: 'Created with the team',
        prefix: generated.prefix,
        secretHash: generated.secretHash,
        scopes: [],
      });
      recordTeamLog(em, { teamId: team.id, action: LogAction.memberJoined, teamMemberId: owner.id, targetTeamMemberId: owner.id });
      recordTeamLog(em, { teamId: team.id, action: LogAction.apiKeyCreated, targetIdentifier: apiKey.id });
      return { team: teamView(team), owner: teamMemberView(owner), apiKey: apiKeyView(apiKey, null, generated.key) };
    });
  }

  /** The teams, newest first, archived ones too; `search`: a part of the name, any case. `{data, count}` as the spec's lists. */
  async listTeams(paging: Paging, search?: string) {
    const where = search ? { name: { $ilike: `%${search.replace(/[\\%_]/g, '\\$&')}%` } } : {};
    const [teams, count] = await this.orm.em.fork().findAndCount(Team, where, {
      orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
      limit: paging.pageSize,
      offset: (paging.pageNumber - 1) * paging.pageSize,
    });
    return { data: teams.map(teamView), count };
  }

  /** ApiKeyInfo of every key of the team, newest first; never a secret. 404 for a team that does not exist. */
  async listApiKeys(teamId: string) {
    const team = await this.getTeam(teamId);
    const keys = await this.orm.em.fork().find(ApiKey, { team }, { populate: ['teamMember'], orderBy: [{ createdAt: 'desc' }, { id: 'asc' }] });
    return keys.map((key) => apiKeyInfoView(key, key.teamMember ?? null));
  }

  async getTeam(teamId: string): Promise<Team> {
    const team = isUuid(teamId) ? await this.orm.em.fork().findOne(Team, { id: teamId }, { populate: ['plan'] }) : null;
    if (!team) throw notFound('team', teamId);
    return team;
  }

  /**
   * The team's effective limits and storage counters in one plain query: read
   * before every upload, where hydrating entities cost more than the query.
   */
  async getStorageState(teamId: string): Promise<TeamStorageState> {
    const rows = isUuid(teamId)
      ? await this.orm.em.getConnection().execute<{ limits: PlanLimits | null; limit_overrides: Partial<PlanLimits>; used_storage: string; reserved_storage: string; strip_metadata: boolean }[]>(
          'select p.limits, t.limit_overrides, t.used_storage, t.reserved_storage, t.strip_metadata from team t left join plan p on p.id = t.plan_id where t.id = ?',
          [teamId],
        )
      : [];
    const row = rows[0];
    if (!row) throw notFound('team', teamId);
    return {
      limits: effectiveLimits(row.limits, row.limit_overrides ?? {}),
      usedStorage: Number(row.used_storage),
      reservedStorage: Number(row.reserved_storage),
      stripMetadata: row.strip_metadata,
    };
  }

  async getLimits(teamId: string): Promise<PlanLimits> {
    const team = await this.getTeam(teamId);
    return effectiveLimits(team.plan?.limits, team.limitOverrides);
  }

  /** Overrides the plan's limits for one team; the answer is the team's effective limits. */
  async updateLimits(teamId: string, input: unknown): Promise<PlanLimits> {
    const patch = parseInput(limitsPatchSchema, input);
    if (!isUuid(teamId)) throw notFound('team', teamId);
    return this.orm.em.fork().transactional(async (em) => {
      const team = await em.findOne(Team, { id: teamId }, { populate: ['plan'], lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!team) throw notFound('team', teamId);
      team.limitOverrides = { ...team.limitOverrides, ...patch };
      recordTeamLog(em, { teamId, action: LogAction.teamUpdated, data: { limits: patch } });
      return effectiveLimits(team.plan?.limits, team.limitOverrides);
    });
  }
}
