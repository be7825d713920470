import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Group } from '../groups/group.entity.ts';
import { Team } from '../teams/team.entity.ts';

/** Invite of spec 2.13: joining puts the new member into `group`. */
export const InviteSchema = defineEntity({
  name: 'Invite',
  tableName: 'team_invite',
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    group: () => p.manyToOne(Group).deleteRule('cascade').index(),
    isUsed: p.boolean().default(false),
    isMultiUse: p.boolean().default(false),
    createdAt: p.datetime().onCreate(() => new Date()),
    expireDate: p.datetime(),
  },
});

export class Invite extends InviteSchema.class {}
InviteSchema.setClass(Invite);
