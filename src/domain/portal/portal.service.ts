import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { notFound, portalConflict, portalSubdomainCooldown } from '../../errors/errors.ts';
import { parseTargetUrl } from '../automations/target-url.ts';
import { Team } from '../teams/team.entity.ts';
import { parseInput } from '../validation.ts';
import { PortalEnvironment } from './portal-environment.entity.ts';
import { subdomainSchema } from './subdomain-rules.ts';

/** How long after a subdomain change the next one is refused (429): links to the old one keep failing for a while after every change. */
export const SUBDOMAIN_CHANGE_COOLDOWN_DAYS = 7;
const COOLDOWN_MS = SUBDOMAIN_CHANGE_COOLDOWN_DAYS * 24 * 3600 * 1000;

const imageUrl = z.string().max(2048).nullable().optional().meta({ description: 'An http(s) URL without credentials, or null.' });

export const createPortalSchema = z.strictObject({
  subdomain: subdomainSchema,
  name: z.string().trim().min(3).max(32),
  logoURL: imageUrl,
  faviconURL: imageUrl,
  language: z.string().regex(/^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$/, 'must be a language tag such as en or de-DE').max(16).optional(),
  showApplyPanel: z.boolean().optional(),
  showTeamOverview: z.boolean().optional(),
  skipPortalPage: z.boolean().optional(),
});
export const updatePortalSchema = createPortalSchema.partial();

/** PortalEnvironment of spec 2.20; customDomain is the domain set (pending or active), null when none is. */
export function portalView(portal: PortalEnvironment) {
  const domainSet = portal.customDomainState === 'pending' || portal.customDomainState === 'active';
  return {
    id: portal.id,
    teamId: portal.team.id,
    subdomain: portal.subdomain,
    domainChangeCount: portal.domainChangeCount,
    lastDomainChange: portal.lastDomainChange?.toISOString() ?? null,
    name: portal.name,
    customDomain: domainSet ? portal.customDomain ?? null : null,
    logoURL: portal.logoUrl ?? null,
    faviconURL: portal.faviconUrl ?? null,
    language: portal.language,
    showApplyPanel: portal.showApplyPanel,
    showTeamOverview: portal.showTeamOverview,
    skipPortalPage: portal.skipPortalPage,
    createdAt: portal.createdAt.toISOString(),
    updatedAt: portal.updatedAt.toISOString(),
  };
}

function checkedImageUrl(value: string | null | undefined, field: string): string | null | undefined {
  if (value === undefined || value === null) return value;
  return parseTargetUrl(value, { allowPrivateTargets: true, field, keepFragment: true });
}

/** A unique violation of the portal table: which of its rules it broke. */
function conflictOf(error: UniqueConstraintViolationException) {
  return portalConflict(/subdomain/.test(error.message) ? 'subdomainTaken' : 'exists');
}

/**
 * The team's portal environment (spec 2.20; docs/workspace.md): one per team, its subdomain unique
 * across teams (the unique index decides between racing instances: 409), changed at most once per
 * SUBDOMAIN_CHANGE_COOLDOWN_DAYS (429), each change counted in domainChangeCount.
 */
export class PortalService {
  private readonly orm: MikroORM;
  private readonly now: () => Date;

  constructor(options: { orm: MikroORM; now?: () => Date }) {
    this.orm = options.orm;
    this.now = options.now ?? (() => new Date());
  }

  async get(teamId: string) {
    return portalView(await this.portal(this.orm.em.fork(), teamId));
  }

  async create(teamId: string, input: unknown) {
    const body = parseInput(createPortalSchema, input);
    const logoUrl = checkedImageUrl(body.logoURL, 'logoURL');
    const faviconUrl = checkedImageUrl(body.faviconURL, 'faviconURL');
    const em = this.orm.em.fork();
    if (await em.count(PortalEnvironment, { team: teamId })) throw portalConflict('exists');
    const portal = em.create(PortalEnvironment, {
      team: em.getReference(Team, teamId), subdomain: body.subdomain, name: body.name, logoUrl: logoUrl ?? null, faviconUrl: faviconUrl ?? null,
      language: body.language ?? 'en', showApplyPanel: body.showApplyPanel ?? true, showTeamOverview: body.showTeamOverview ?? true,
      skipPortalPage: body.skipPortalPage ?? true,
    });
    try {
      await em.flush();
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw conflictOf(error);
      throw error;
    }
    return portalView(portal);
  }

  async update(teamId: string, input: unknown) {
    const body = parseInput(updatePortalSchema, input);
    const logoUrl = checkedImageUrl(body.logoURL, 'logoURL');
    const faviconUrl = checkedImageUrl(body.faviconURL, 'faviconURL');
    try {
      return await this.orm.em.fork().transactional(async (em) => {
        // The row lock orders two changes of one portal, so the second sees the first's lastDomainChange.
        const portal = await this.portal(em, teamId, true);
        if (body.subdomain !== undefined && body.subdomain !== portal.subdomain) {
          const now = this.now();
          if (portal.lastDomainChange) {
            const allowedAt = new Date(portal.lastDomainChange.getTime() + COOLDOWN_MS);
            if (allowedAt > now) throw portalSubdomainCooldown(Math.ceil((allowedAt.getTime() - now.getTime()) / 1000), allowedAt);
          }
          portal.subdomain = body.subdomain;
          portal.domainChangeCount += 1;
          portal.lastDomainChange = now;
        }
        if (body.name !== undefined) portal.name = body.name;
        if (logoUrl !== undefined) portal.logoUrl = logoUrl;
        if (faviconUrl !== undefined) portal.faviconUrl = faviconUrl;
        if (body.language !== undefined) portal.language = body.language;
        if (body.showApplyPanel !== undefined) portal.showApplyPanel = body.showApplyPanel;
        if (body.showTeamOverview !== undefined) portal.showTeamOverview = body.showTeamOverview;
        if (body.skipPortalPage !== undefined) portal.skipPortalPage = body.skipPortalPage;
        await em.flush();
        return portalView(portal);
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw conflictOf(error);
      throw error;
    }
  }

  private async portal(em: EntityManager, teamId: string, lock = false): Promise<PortalEnvironment> {
    const portal = await em.findOne(PortalEnvironment, { team: teamId }, lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {});
    if (!portal) throw notFound('portal environment of the team (create it with POST /portal)');
    return portal;
  }
}
