import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { Group } from '../groups/group.entity.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { Team } from '../teams/team.entity.ts';

/**
 * News of spec 2.16 (Migration20261130030000NewsLinksPortal). A draft (`isDraft`) is seen only by
 * editors (team.news.manage); a published item counts against maxNews. Targeted at groups through
 * NewsGroup: no group means every member.
 */
export const NewsSchema = defineEntity({
  name: 'News',
  tableName: 'news',
  extends: BaseSchema,
  indexes: [{ name: 'news_team_draft_idx', properties: ['team', 'isDraft'] }],
  properties: {
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    creator: () => p.manyToOne(TeamMember).nullable().deleteRule('set null'),
    title: p.string().length(200).check('length(title) >= 1'),
    content: p.text().check('length(content) >= 1'),
    isImportant: p.boolean().default(false),
    showOnDashboard: p.boolean().default(false),
    isDraft: p.boolean().default(true),
    /** When it was published; null for a draft. */
    publishedAt: p.datetime().nullable(),
    groups: () => p.oneToMany(NewsGroup).mappedBy('news'),
  },
});

export class News extends NewsSchema.class {}
NewsSchema.setClass(News);

/** A group a news item is targeted at. */
export const NewsGroupSchema = defineEntity({
  name: 'NewsGroup',
  tableName: 'news_group',
  properties: {
    news: () => p.manyToOne(News).primary().deleteRule('cascade'),
    group: () => p.manyToOne(Group).primary().deleteRule('cascade').index(),
  },
});

export class NewsGroup extends NewsGroupSchema.class {}
NewsGroupSchema.setClass(NewsGroup);

export const BANNER_TYPES = ['INFO', 'WARNING', 'ERROR'] as const;
export const BANNER_MESSAGE_TYPES = ['TEXT', 'KEY'] as const;

/** TeamNews of spec 2.16: the one banner a team shows its members, set by the operator or the team's owner. */
export const TeamNewsBannerSchema = defineEntity({
  name: 'TeamNewsBanner',
  tableName: 'team_news_banner',
  properties: {
    team: () => p.manyToOne(Team).primary().deleteRule('cascade'),
    title: p.string().length(200),
    type: p.string().length(16),
    messageType: p.string().length(16),
    description: p.text().nullable(),
    language: p.string().length(16).nullable(),
    buttonText: p.string().length(100).nullable(),
    buttonUrl: p.text().nullable(),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});

export class TeamNewsBanner extends TeamNewsBannerSchema.class {}
TeamNewsBannerSchema.setClass(TeamNewsBanner);
