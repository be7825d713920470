import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { announceAuthChange, type AuthCache } from '../../auth/auth-changes.ts';
import { notFound } from '../../errors/errors.ts';
import type { Actor } from '../actor.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { isUuid, parseInput } from '../validation.ts';
import { teamView } from '../views.ts';
import { Account } from '../accounts/account.entity.ts';
import { minimalAccountView } from '../accounts/account-data.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { JOIN_REQUIREMENTS, Team } from './team.entity.ts';
import type { TeamStateCache } from './team-state-cache.ts';

/** An IANA time zone name the runtime knows, such as Europe/Berlin or UTC; not an offset. */
export function isTimeZone(value: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(value)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

/** A BCP 47 language tag such as en or de-DE. */
export function isLocale(value: string): boolean {
  try {
    return Intl.getCanonicalLocales(value).length === 1;
  } catch {
    return false;
  }
}

export const updateTeamSchema = z.strictObject({
  name: z.string().trim().min(2).max(24).optional(),
  logo: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(2048).nullable().optional(),
  timezone: z.string().max(64).refine(isTimeZone, 'must be an IANA time zone such as Europe/Berlin').optional(),
  locale: z.string().max(16).refine(isLocale, 'must be a language tag such as en or de-DE').optional(),
  stripMetadata: z
    .boolean()
    .optional()
    .meta({ description: 'Whether uploads that do not say `stripMetadata` have the EXIF, XMP and IPTC of their JPEG, PNG and WebP images stripped.' }),
  requirements: z
    .strictObject(Object.fromEntries(JOIN_REQUIREMENTS.map((name) => [name, z.boolean().optional()])) as Record<(typeof JOIN_REQUIREMENTS)[number], z.ZodOptional<z.ZodBoolean>>)
    .optional()
    .meta({ description: 'Join requirements to change; the others stay.' }),
});

function minimalView(team: Team) {
  return { id: team.id, name: team.name, logo: team.logo ?? null, priceId: team.priceId ?? null };
}

/** The team itself as its own members see and change it (spec 2.11). */
export class TeamSettingsService {
  private readonly orm: MikroORM;
  private readonly authCache: AuthCache;
  private readonly teamStates: TeamStateCache | null;

  /** `teamStates`: dropped for the team when its stripMetadata setting changes (other instances hear it from the database). */
  constructor(options: { orm: MikroORM; authCache: AuthCache; teamStates?: TeamStateCache }) {
    this.orm = options.orm;
    this.authCache = options.authCache;
    this.teamStates = options.teamStates ?? null;
  }

  async get(teamId: string) {
    return teamView(await this.find(this.orm.em.fork(), teamId));
  }

  async minimal(teamId: string) {
    return minimalView(await this.find(this.orm.em.fork(), teamId));
  }

  /**
   * Minimal info plus what a user must have linked to join; `connections` are the linked accounts
   * of the user behind `memberId` (a session's member), empty for a team API key.
   */
  async joinInfo(teamId: string, memberId: string | null = null) {
    const em = this.orm.em.fork();
    const team = await this.find(em, teamId);
    const member = memberId ? await em.findOne(TeamMember, { id: memberId, team }) : null;
    const accounts = member ? await em.find(Account, { user: member.user }, { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] }) : [];
    return { ...minimalView(team), requirements: { ...team.joinRequirements }, connections: accounts.map(minimalAccountView) };
  }

  async update(teamId: string, input: unknown, actor: Actor) {
    const { requirements, ...fields } = parseInput(updateTeamSchema, input);
    const view = await this.orm.em.fork().transactional(async (em) => {
      const team = await this.find(em, teamId, true);
      const changed: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(fields) as [keyof typeof fields, string | boolean | null][]) {
        if (value !== undefined && team[name] !== value) changed[name] = value;
      }
      if (requirements && JOIN_REQUIREMENTS.some((name) => requirements[name] !== undefined && requirements[name] !== team.joinRequirements[name])) {
        changed['requirements'] = requirements;
        team.joinRequirements = { ...team.joinRequirements, ...requirements };
      }
      if (Object.keys(changed).length > 0) {
        em.assign(team, fields);
        recordTeamLog(em, { teamId, action: LogAction.teamUpdated, teamMemberId: actor.teamMemberId, data: changed });
      }
      await em.flush();
      return teamView(team);
    });
    // Uploads read the setting with the team's limits (TeamStateCache): this instance's next upload sees the change.
    if (fields.stripMetadata !== undefined) this.teamStates?.invalidateTeam(teamId);
    return view;
  }

  /**
   * Archives or unarchives the team; logged as TEAM_UPDATED with `{archived}`. Idempotent. The
   * team's keys carry the flag (an archived team's keys only read), so every instance drops them.
   */
  async setArchived(teamId: string, archived: boolean, actor: Actor) {
    const view = await this.orm.em.fork().transactional(async (em) => {
      const team = await this.find(em, teamId, true);
      if (team.archived !== archived) {
        team.archived = archived;
        recordTeamLog(em, { teamId, action: LogAction.teamUpdated, teamMemberId: actor.teamMemberId, data: { archived } });
        await em.flush();
        await announceAuthChange(em, teamId);
      }
      return teamView(team);
    });
    this.authCache.invalidateTeam(teamId);
    return view;
  }

  private async find(em: EntityManager, teamId: string, lock = false): Promise<Team> {
    const team = isUuid(teamId) ? await em.findOne(Team, { id: teamId }, lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {}) : null;
    if (!team) throw notFound('team', teamId);
    return team;
  }
}
