import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { Team } from '../teams/team.entity.ts';

export const GroupSchema = defineEntity({
  name: 'Group',
  tableName: 'team_group',
  extends: BaseSchema,
  properties: {
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    name: p.string().length(24).check('length(name) >= 2'),
    permissions: p.array().default([]),
    sort: p.integer().default(0),
    color: p.string().length(7).default('#808080').check("color ~ '^#([A-Fa-f0-9]{6}|[A-Fa-f0-9]{3})$'"),
  },
});

export class Group extends GroupSchema.class {}
GroupSchema.setClass(Group);
