import { QueryOrder } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { conflict, notFound } from '../../errors/errors.ts';
import { Group } from '../groups/group.entity.ts';
import { TeamMember, TeamMemberGroup } from '../members/team-member.entity.ts';
import type { Paging } from '../paging.ts';
import { lockTeamForLimits, requireBelowLimit } from '../teams/team-limit-lock.ts';
import { Team } from '../teams/team.entity.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { groupView } from '../views.ts';
import { News, NewsGroup } from './news.entity.ts';

const groupIds = z.array(uuid).max(50).refine((ids) => new Set(ids.map((id) => id.toLowerCase())).size === ids.length, 'must not repeat a group');

export const createNewsSchema = z.strictObject({
  title: z.string().trim().min(1).max(200),
  content: z.string().trim().min(1).max(20_000),
  isImportant: z.boolean().optional(),
  showOnDashboard: z.boolean().optional(),
  isDraft: z.boolean().optional().meta({ description: 'Default true. false publishes at once (counted against maxNews).' }),
  groupIds: groupIds.optional().meta({ description: 'Groups of the team the news is for; empty or absent: every member.' }),
});
export const updateNewsSchema = createNewsSchema.omit({ isDraft: true }).partial();

const flag = z.enum(['true', 'false']).transform((value) => value === 'true');
const listFilterSchema = z.strictObject({ isDraft: flag.optional(), isImportant: flag.optional(), showOnDashboard: flag.optional() });
export type NewsFilters = z.output<typeof listFilterSchema>;

export function parseNewsFilters(query: URLSearchParams): NewsFilters {
  return parseInput(listFilterSchema, Object.fromEntries([...query.entries()].filter(([key]) => key !== 'pageNumber' && key !== 'pageSize')));
}

/** Who reads: an editor (team.news.manage) sees drafts and every targeting; anyone else the published news for them. */
export interface NewsReader {
  editor: boolean;
  /** The reader's member (its groups decide the targeting); null for a key acting as the owner. */
  memberId: string | null;
}

/** Member short info of spec 2.13. */
function memberShortView(member: TeamMember) {
  return { id: member.id, userId: member.user.id, name: member.name, image: member.image ?? null, joinedTeamAt: member.joinedTeamAt.toISOString() };
}

function newsInfoView(news: News, groups: Group[]) {
  return {
    id: news.id,
    teamId: news.team.id,
    creatorId: news.creator?.id ?? null,
    title: news.title,
    content: news.content,
    isImportant: news.isImportant,
    showOnDashboard: news.showOnDashboard,
    isDraft: news.isDraft,
    publishedAt: news.publishedAt?.toISOString() ?? null,
    createdAt: news.createdAt.toISOString(),
    updatedAt: news.updatedAt.toISOString(),
    groups: groups.map(groupView),
    creator: news.creator ? memberShortView(news.creator) : null,
  };
}

/**
 * News of spec 2.16 (docs/workspace.md, "News, banners, links and the portal"): drafts for
 * editors, publish and unpublish, group targeting; at most maxNews published per team (402),
 * counted under the team row lock so concurrent publishes on any instance cannot pass it.
 */
export class NewsService {
  private readonly orm: MikroORM;

  constructor(options: { orm: MikroORM }) {
    this.orm = options.orm;
  }

  async list(teamId: string, reader: NewsReader, filters: NewsFilters, paging: Paging) {
    // Drafts are the editors' alone: a reader asking for them gets none.
    if (!reader.editor && filters.isDraft === true) return { data: [], count: 0 };
    const em = this.orm.em.fork();
    const where = {
      team: teamId,
      ...(filters.isImportant !== undefined && { isImportant: filters.isImportant }),
      ...(filters.showOnDashboard !== undefined && { showOnDashboard: filters.showOnDashboard }),
      ...(reader.editor ? (filters.isDraft !== undefined && { isDraft: filters.isDraft }) : await this.visibleTo(em, reader)),
    };
    const [items, count] = await em.findAndCount(News, where, {
      populate: ['creator', 'groups.group'],
      orderBy: [{ publishedAt: QueryOrder.DESC_NULLS_FIRST }, { createdAt: 'desc' }, { id: 'asc' }],
      limit: paging.pageSize,
      offset: (paging.pageNumber - 1) * paging.pageSize,
    });
    return { data: items.map((news) => newsInfoView(news, sortedGroups(news))), count };
  }

  async get(teamId: string, newsId: string, reader: NewsReader) {
    const em = this.orm.em.fork();
    const where = reader.editor ? {} : await this.visibleTo(em, reader);
    const news = isUuid(newsId) ? await em.findOne(News, { id: newsId, team: teamId, ...where }, { populate: ['creator', 'groups.group'] }) : null;
    if (!news) throw notFound('news', newsId);
    return newsInfoView(news, sortedGroups(news));
  }

  async create(teamId: string, input: unknown, creatorId: string | null) {
    const body = parseInput(createNewsSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const publish = body.isDraft === false;
      let team: Team;
      if (publish) {
        const locked = await lockTeamForLimits(em, teamId);
        requireBelowLimit(locked.limits, 'maxNews', await em.count(News, { team: teamId, isDraft: false }), 'published news');
        team = locked.team;
      } else {
        team = await em.findOneOrFail(Team, { id: teamId });
      }
      const groups = await this.groups(em, teamId, body.groupIds ?? []);
      const news = em.create(News, {
        team, creator: creatorId ? em.getReference(TeamMember, creatorId) : null, title: body.title, content: body.content,
        isImportant: body.isImportant ?? false, showOnDashboard: body.showOnDashboard ?? false, isDraft: !publish, publishedAt: publish ? new Date() : null,
      });
      for (const group of groups) em.create(NewsGroup, { news, group });
      await em.flush();
      return this.info(em, news.id);
    });
  }

  async update(teamId: string, newsId: string, input: unknown) {
    const body = parseInput(updateNewsSchema, input);
    return this.orm.em.fork().transactional(async (em) => {
      const news = await this.news(em, teamId, newsId);
      if (body.title !== undefined) news.title = body.title;
      if (body.content !== undefined) news.content = body.content;
      if (body.isImportant !== undefined) news.isImportant = body.isImportant;
      if (body.showOnDashboard !== undefined) news.showOnDashboard = body.showOnDashboard;
      if (body.groupIds !== undefined) {
        const groups = await this.groups(em, teamId, body.groupIds);
        await em.nativeDelete(NewsGroup, { news });
        for (const group of groups) em.create(NewsGroup, { news, group });
        news.updatedAt = new Date();
      }
      await em.flush();
      return this.info(em, news.id);
    });
  }

  /** Draft → published: 409 when it is published already, 402 past maxNews. */
  async publish(teamId: string, newsId: string) {
    return this.orm.em.fork().transactional(async (em) => {
      const { limits } = await lockTeamForLimits(em, teamId);
      const news = await this.news(em, teamId, newsId);
      if (!news.isDraft) throw conflict('The news is published already', 'isDraft');
      requireBelowLimit(limits, 'maxNews', await em.count(News, { team: teamId, isDraft: false }), 'published news');
      news.isDraft = false;
      news.publishedAt = new Date();
      await em.flush();
      return this.info(em, news.id);
    });
  }

  /** Published → draft (frees its place under maxNews): 409 when it is a draft. One of two racing calls wins. */
  async unpublish(teamId: string, newsId: string) {
    return this.orm.em.fork().transactional(async (em) => {
      const news = await this.news(em, teamId, newsId);
      const changed = await em.nativeUpdate(News, { id: news.id, isDraft: false }, { isDraft: true, publishedAt: null, updatedAt: new Date() });
      if (changed === 0) throw conflict('The news is a draft already', 'isDraft');
      return this.info(em, news.id, true);
    });
  }

  async delete(teamId: string, newsId: string): Promise<void> {
    const em = this.orm.em.fork();
    const deleted = isUuid(newsId) ? await em.nativeDelete(News, { id: newsId, team: teamId }) : 0;
    if (deleted === 0) throw notFound('news', newsId);
  }

  /** The condition a non-editor's news meet: published, and for every member or for a group of the reader. */
  private async visibleTo(em: EntityManager, reader: NewsReader) {
    const memberGroups = reader.memberId
      ? (await em.find(TeamMemberGroup, { member: reader.memberId }, { fields: ['group'] })).map((membership) => membership.group.id)
      : [];
    return {
      isDraft: false,
      $or: [{ groups: { $none: {} } }, { groups: { $some: { group: { $in: memberGroups } } } }],
    };
  }

  private async groups(em: EntityManager, teamId: string, ids: string[]): Promise<Group[]> {
    if (ids.length === 0) return [];
    const groups = await em.find(Group, { id: { $in: ids.map((id) => id.toLowerCase()) }, team: teamId });
    const missing = ids.find((id) => !groups.some((group) => group.id === id.toLowerCase()));
    if (missing) throw notFound('group', missing);
    return groups;
  }

  private async news(em: EntityManager, teamId: string, newsId: string): Promise<News> {
    const news = isUuid(newsId) ? await em.findOne(News, { id: newsId, team: teamId }) : null;
    if (!news) throw notFound('news', newsId);
    return news;
  }

  private async info(em: EntityManager, newsId: string, refresh = false) {
    const news = await em.findOneOrFail(News, { id: newsId }, { populate: ['creator', 'groups.group'], ...(refresh && { refresh: true }) });
    return newsInfoView(news, sortedGroups(news));
  }
}

function sortedGroups(news: News): Group[] {
  return news.groups.getItems().map((target) => target.group).sort((a, b) => a.sort - b.sort || a.name.localeCompare(b.name));
}
