import type { MikroORM } from '@mikro-orm/postgresql';
import { notFound } from '../../errors/errors.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { PortalEnvironment } from './portal-environment.entity.ts';

/**
 * What a team's portal shows to anyone, without a key: the portal's public settings and, when the
 * team turned `showTeamOverview` on, the portal team overview of spec 2.20. A portal is found by
 * its subdomain, or by its custom domain once that is active (a name with a dot).
 */
export class PortalPages {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  async portal(host: string) {
    const portal = await this.find(host);
    return {
      subdomain: portal.subdomain,
      customDomain: portal.customDomainState === 'active' ? portal.customDomain ?? null : null,
      name: portal.name,
      logoURL: portal.logoUrl ?? null,
      faviconURL: portal.faviconUrl ?? null,
      language: portal.language,
      showApplyPanel: portal.showApplyPanel,
      showTeamOverview: portal.showTeamOverview,
      skipPortalPage: portal.skipPortalPage,
      team: { id: portal.team.id, name: portal.team.name, logo: portal.team.logo ?? null },
    };
  }

  /** Current members (not those who left), by sort then name; 404 while the team keeps its overview hidden. */
  async teamOverview(host: string) {
    const portal = await this.find(host);
    if (!portal.showTeamOverview) throw notFound('team overview of the portal');
    const members = await this.orm.em.fork().find(TeamMember, { team: portal.team.id, leftTeamAt: null }, {
      populate: ['mainGroup'], orderBy: [{ sort: 'asc' }, { name: 'asc' }, { id: 'asc' }],
    });
    return members.map((member) => ({
      id: member.id,
      name: member.name,
      image: member.image ?? null,
      mainGroup: member.mainGroup ? { id: member.mainGroup.id, name: member.mainGroup.name, color: member.mainGroup.color, sort: member.mainGroup.sort } : null,
      sort: member.sort,
      isTeamOwner: member.isTeamOwner,
      createdAt: member.createdAt.toISOString(),
    }));
  }

  private async find(host: string): Promise<PortalEnvironment> {
    const name = host.toLowerCase();
    const where = name.includes('.') ? { customDomain: name, customDomainState: 'active' } : { subdomain: name };
    const portal = name.length <= 64 ? await this.orm.em.fork().findOne(PortalEnvironment, where, { populate: ['team'] }) : null;
    if (!portal) throw notFound('portal', host);
    return portal;
  }
}
