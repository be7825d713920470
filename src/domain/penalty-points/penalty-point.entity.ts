import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { TeamMember } from '../members/team-member.entity.ts';
import { Team } from '../teams/team.entity.ts';

/** PenaltyPoint of spec 2.15: points one member gave another; they count until expiresAt (Migration20261130020000WorkspacePeople). */
export const PenaltyPointSchema = defineEntity({
  name: 'PenaltyPoint',
  indexes: [
    { name: 'penalty_point_team_created_idx', properties: ['team', 'createdAt'] },
    { name: 'penalty_point_member_expires_idx', properties: ['teamMember', 'expiresAt'] },
  ],
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    teamMember: () => p.manyToOne(TeamMember).deleteRule('cascade'),
    /** Who gave them; null once that member row is gone (it never is while the team exists). */
    committer: () => p.manyToOne(TeamMember).nullable().deleteRule('set null'),
    points: p.integer().check('points >= 1'),
    message: p.text().check('length(message) >= 1'),
    createdAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime(),
  },
});

export class PenaltyPoint extends PenaltyPointSchema.class {}
PenaltyPointSchema.setClass(PenaltyPoint);
