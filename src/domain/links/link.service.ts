import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { notFound } from '../../errors/errors.ts';
import { parseTargetUrl } from '../automations/target-url.ts';
import { lockTeamForLimits, requireBelowLimit } from '../teams/team-limit-lock.ts';
import { isUuid, parseInput } from '../validation.ts';
import { Link, LINK_TYPES, type LinkType } from './link.entity.ts';

export const createLinkSchema = z.strictObject({
  title: z.string().trim().min(1).max(100),
  destination: z.string().meta({ description: 'An http(s) URL without credentials; for FRAME also not a private, loopback or link-local address.' }),
  type: z.enum(LINK_TYPES).optional().meta({ description: 'Default REDIRECT.' }),
  icon: z.string().trim().min(1).max(64).nullable().optional().meta({ description: 'An icon name or emoji.' }),
});
export const updateLinkSchema = createLinkSchema.partial();

function linkView(link: Link) {
  return {
    id: link.id, teamId: link.team.id, title: link.title, destination: link.destination, type: link.type, icon: link.icon ?? null,
    createdAt: link.createdAt.toISOString(), updatedAt: link.updatedAt.toISOString(),
  };
}

/**
 * The destination is checked as an automation's target is (src/domain/automations/target-url.ts):
 * http(s) only, no credentials; a FRAME is embedded in members' pages, so it must be a public
 * address too. REDIRECT links may point into a private network (a browser opens them, the service never does).
 */
function checkedDestination(destination: string, type: LinkType): string {
  return parseTargetUrl(destination, { allowPrivateTargets: type !== 'FRAME', field: 'destination', keepFragment: true });
}

/** Links of spec 2.16: at most maxLinks per team (402), counted under the team row lock. */
export class LinkService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  async list(teamId: string) {
    const links = await this.orm.em.fork().find(Link, { team: teamId }, { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    return links.map(linkView);
  }

  async get(teamId: string, linkId: string) {
    return linkView(await this.link(this.orm.em.fork(), teamId, linkId));
  }

  async create(teamId: string, input: unknown) {
    const body = parseInput(createLinkSchema, input);
    const type = body.type ?? 'REDIRECT';
    const destination = checkedDestination(body.destination, type);
    return this.orm.em.fork().transactional(async (em) => {
      const { team, limits } = await lockTeamForLimits(em, teamId);
      requireBelowLimit(limits, 'maxLinks', await em.count(Link, { team }), 'links');
      const link = em.create(Link, { team, title: body.title, destination, type, icon: body.icon ?? null });
      await em.flush();
      return linkView(link);
    });
  }

  async update(teamId: string, linkId: string, input: unknown) {
    const body = parseInput(updateLinkSchema, input);
    const em = this.orm.em.fork();
    const link = await this.link(em, teamId, linkId);
    const type = body.type ?? (link.type as LinkType);
    // A link turned into a FRAME has its old destination checked as a frame's.
    const destination = body.destination !== undefined || body.type !== undefined ? checkedDestination(body.destination ?? link.destination, type) : link.destination;
    em.assign(link, {
      ...(body.title !== undefined && { title: body.title }), ...(body.icon !== undefined && { icon: body.icon }), type, destination,
    });
    await em.flush();
    return linkView(link);
  }

  async delete(teamId: string, linkId: string): Promise<void> {
    const deleted = isUuid(linkId) ? await this.orm.em.fork().nativeDelete(Link, { id: linkId, team: teamId }) : 0;
    if (deleted === 0) throw notFound('link', linkId);
  }

  private async link(em: EntityManager, teamId: string, linkId: string): Promise<Link> {
    const link = isUuid(linkId) ? await em.findOne(Link, { id: linkId, team: teamId }) : null;
    if (!link) throw notFound('link', linkId);
    return link;
  }
}
