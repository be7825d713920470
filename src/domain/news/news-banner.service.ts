import type { MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { forbidden, notFound } from '../../errors/errors.ts';
import { parseTargetUrl } from '../automations/target-url.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid, parseInput } from '../validation.ts';
import { BANNER_MESSAGE_TYPES, BANNER_TYPES, TeamNewsBanner } from './news.entity.ts';

export const bannerSchema = z.strictObject({
  title: z.string().trim().min(1).max(200).meta({ description: 'The text, or with messageType KEY a translation key.' }),
  type: z.enum(BANNER_TYPES),
  messageType: z.enum(BANNER_MESSAGE_TYPES),
  description: z.string().trim().max(2000).nullable().optional(),
  language: z.string().regex(/^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$/, 'must be a language tag such as en or de-DE').max(16).nullable().optional(),
  button: z.strictObject({
    text: z.string().trim().min(1).max(100),
    url: z.string().meta({ description: 'An http(s) URL without credentials.' }),
  }).nullable().optional(),
});

function bannerView(banner: TeamNewsBanner) {
  return {
    title: banner.title,
    type: banner.type,
    messageType: banner.messageType,
    description: banner.description ?? null,
    language: banner.language ?? null,
    button: banner.buttonText && banner.buttonUrl ? { text: banner.buttonText, url: banner.buttonUrl } : null,
  };
}

/**
 * The team's news banner (TeamNews of spec 2.16): one per team, set and removed by the operator or
 * the team's owner (a key acting as the owner, or the owner's own key or session), read by every member.
 */
export class NewsBannerService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  /** The banner, or null when the team shows none. */
  async get(teamId: string) {
    const banner = await this.orm.em.fork().findOne(TeamNewsBanner, { team: teamId });
    return banner ? bannerView(banner) : null;
  }

  /** `memberId`: the caller's member (null: the operator, or a key acting as the owner). */
  async set(teamId: string, input: unknown, memberId: string | null) {
    const body = parseInput(bannerSchema, input);
    const buttonUrl = body.button ? parseTargetUrl(body.button.url, { allowPrivateTargets: true, field: 'button.url', keepFragment: true }) : null;
    const em = this.orm.em.fork();
    await this.requireOwner(teamId, memberId);
    const fields = {
      title: body.title, type: body.type, messageType: body.messageType, description: body.description ?? null, language: body.language ?? null,
      buttonText: body.button?.text ?? null, buttonUrl,
    };
    // One statement, so two owners setting it at once leave one of the two banners whole.
    await em.upsert(TeamNewsBanner, { team: em.getReference(Team, teamId), ...fields, updatedAt: new Date() });
    return bannerView((await em.fork().findOneOrFail(TeamNewsBanner, { team: teamId })));
  }

  async remove(teamId: string, memberId: string | null): Promise<void> {
    await this.requireOwner(teamId, memberId);
    await this.orm.em.fork().nativeDelete(TeamNewsBanner, { team: teamId });
  }

  /** For the operator's routes: 404 for a team that does not exist. */
  async requireTeam(teamId: string): Promise<void> {
    if (!isUuid(teamId) || !(await this.orm.em.fork().findOne(Team, { id: teamId }, { fields: ['id'] }))) throw notFound('team', teamId);
  }

  private async requireOwner(teamId: string, memberId: string | null): Promise<void> {
    if (memberId === null) return;
    const member = await this.orm.em.fork().findOne(TeamMember, { id: memberId, team: teamId }, { fields: ['isTeamOwner'] });
    if (!member?.isTeamOwner) throw forbidden('Only the team\'s owner (or the operator) sets the news banner', 'owner');
  }
}
