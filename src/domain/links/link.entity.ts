import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { Team } from '../teams/team.entity.ts';

export const LINK_TYPES = ['FRAME', 'REDIRECT', 'REDIRECT_BLANK'] as const;
export type LinkType = (typeof LINK_TYPES)[number];

/** Link of spec 2.16 (Migration20261130030000NewsLinksPortal); at most maxLinks per team. */
export const LinkSchema = defineEntity({
  name: 'Link',
  tableName: 'team_link',
  extends: BaseSchema,
  properties: {
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    title: p.string().length(100).check('length(title) >= 1'),
    destination: p.text(),
    type: p.string().length(16).default('REDIRECT'),
    icon: p.string().length(64).nullable(),
  },
});

export class Link extends LinkSchema.class {}
LinkSchema.setClass(Link);
