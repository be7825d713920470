import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { notFound, portalConflict, teamLimit } from '../../errors/errors.ts';
import { effectiveLimits } from '../teams/team-limits.ts';
import { Team } from '../teams/team.entity.ts';
import { parseInput } from '../validation.ts';
import { PortalEnvironment } from './portal-environment.entity.ts';
import { portalView } from './portal.service.ts';
import { customDomainSchema } from './subdomain-rules.ts';
import type { TxtResolver } from './txt-resolver.ts';

export const setDomainSchema = z.strictObject({ domain: customDomainSchema });

/** The name the TXT record proving a domain lives at. */
export function txtNameOf(domain: string): string {
  return `_media-verify.${domain}`;
}

/** Custom domain status of spec 2.20 (validation_records only while it waits for its TXT record). */
function domainStatusView(portal: PortalEnvironment) {
  const pending = portal.customDomainState === 'pending';
  return {
    domain: portal.customDomain!,
    status: portal.customDomainState!,
    validation_records: pending && portal.customDomainToken ? { txt_name: txtNameOf(portal.customDomain!), txt_value: portal.customDomainToken } : null,
    verification_errors: portal.customDomainErrors ?? [],
  };
}

/** Domain update response of spec 2.20: the portal and the TXT verification to publish. */
function domainUpdateView(portal: PortalEnvironment) {
  const pending = portal.customDomainState === 'pending';
  return {
    portal: portalView(portal),
    verification: { txtName: pending ? txtNameOf(portal.customDomain!) : null, txtValue: pending ? portal.customDomainToken ?? null : null },
  };
}

const DNS_MISSES = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN', 'ENONAME']);

/**
 * A portal's custom domain (spec 2.20, states of spec 3.2; docs/workspace.md): behind the
 * customPortalDomain plan limit (402). Setting one makes it `pending` with a TXT record to publish;
 * verify looks the record up (through `resolver`, outside any transaction) and makes it `active`, or
 * leaves it pending with verification_errors; removing it makes it `deleted`. The unique index over
 * active domains decides between two teams waiting for one domain.
 */
export class PortalDomainService {
  private readonly orm: MikroORM;
  private readonly resolver: TxtResolver;

  constructor(options: { orm: MikroORM; resolver: TxtResolver }) {
    this.orm = options.orm;
    this.resolver = options.resolver;
  }

  async status(teamId: string) {
    return domainStatusView(await this.withDomain(this.orm.em.fork(), teamId));
  }

  async set(teamId: string, input: unknown) {
    const { domain } = parseInput(setDomainSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const portal = await this.portal(em, teamId, true);
      await this.requireLimit(em, teamId);
      const current = portal.customDomain === domain && (portal.customDomainState === 'pending' || portal.customDomainState === 'active');
      if (current) return domainUpdateView(portal);
      if (await em.count(PortalEnvironment, { customDomain: domain, customDomainState: 'active', id: { $ne: portal.id } })) throw portalConflict('domainTaken');
      portal.customDomain = domain;
      portal.customDomainState = 'pending';
      portal.customDomainToken = `media-verify=${randomBytes(24).toString('hex')}`;
      portal.customDomainErrors = [];
      await em.flush();
      return domainUpdateView(portal);
    });
  }

  async verify(teamId: string) {
    const em = this.orm.em.fork();
    const portal = await this.withDomain(em, teamId);
    if (portal.customDomainState === 'deleted') throw notFound('custom domain of the portal');
    await this.requireLimit(em, teamId);
    if (portal.customDomainState !== 'pending') return domainStatusView(portal);
    const domain = portal.customDomain!;
    const token = portal.customDomainToken!;
    const errors = await this.lookUp(domain, token);
    try {
      // Only the domain and token looked up change state: a change made meanwhile wins.
      await em.nativeUpdate(
        PortalEnvironment,
        { id: portal.id, customDomain: domain, customDomainToken: token, customDomainState: 'pending' },
        errors.length === 0 ? { customDomainState: 'active', customDomainErrors: [], updatedAt: new Date() } : { customDomainErrors: errors, updatedAt: new Date() },
      );
    } catch (error) {
      if (!(error instanceof UniqueConstraintViolationException)) throw error;
      await em.nativeUpdate(PortalEnvironment, { id: portal.id, customDomainToken: token, customDomainState: 'pending' }, {
        customDomainErrors: ['The domain is active for another team\'s portal'], updatedAt: new Date(),
      });
    }
    return domainStatusView(await this.withDomain(this.orm.em.fork(), teamId));
  }

  async remove(teamId: string) {
    return this.orm.em.fork().transactional(async (em) => {
      const portal = await this.withDomain(em, teamId, true);
      if (portal.customDomainState === 'deleted') throw notFound('custom domain of the portal');
      portal.customDomainState = 'deleted';
      portal.customDomainToken = null;
      portal.customDomainErrors = [];
      await em.flush();
      return domainStatusView(portal);
    });
  }

  /** Verification errors for the TXT lookup of `domain`; none when a record holds `token`. */
  private async lookUp(domain: string, token: string): Promise<string[]> {
    const name = txtNameOf(domain);
    let records: string[][];
    try {
      records = await this.resolver.resolveTxt(name);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unknown';
      return [DNS_MISSES.has(code) ? `No TXT record found at ${name}` : `The DNS lookup of ${name} failed (${code}); try again later`];
    }
    if (records.some((chunks) => chunks.join('') === token)) return [];
    return [`The TXT records at ${name} do not hold the expected value`];
  }

  private async requireLimit(em: EntityManager, teamId: string): Promise<void> {
    const team = await em.findOneOrFail(Team, { id: teamId }, { populate: ['plan'] });
    if (!effectiveLimits(team.plan?.limits, team.limitOverrides).customPortalDomain) {
      throw teamLimit('customPortalDomain', 'The team\'s plan does not include a custom portal domain (customPortalDomain)', 'customPortalDomain');
    }
  }

  private async withDomain(em: EntityManager, teamId: string, lock = false): Promise<PortalEnvironment> {
    const portal = await this.portal(em, teamId, lock);
    if (!portal.customDomain) throw notFound('custom domain of the portal');
    return portal;
  }

  private async portal(em: EntityManager, teamId: string, lock: boolean): Promise<PortalEnvironment> {
    const portal = await em.findOne(PortalEnvironment, { team: teamId }, lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {});
    if (!portal) throw notFound('portal environment of the team (create it with POST /portal)');
    return portal;
  }
}
