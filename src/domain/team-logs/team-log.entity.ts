import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { TeamMember } from '../members/team-member.entity.ts';
import { Team } from '../teams/team.entity.ts';

export const TeamLogSchema = defineEntity({
  name: 'TeamLog',
  indexes: [
    { name: 'team_log_team_created_idx', properties: ['team', 'createdAt'] },
    { name: 'team_log_team_action_created_idx', properties: ['team', 'action', 'createdAt'] },
    { name: 'team_log_team_member_created_idx', properties: ['team', 'teamMember', 'createdAt'] },
    { name: 'team_log_team_target_created_idx', properties: ['team', 'targetTeamMember', 'createdAt'] },
  ],
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    system: p.string().length(16).default('APP').check("system in ('APP', 'GAMEPANEL')"),
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    /** The member who acted; null for the operator or the service itself. */
    teamMember: () => p.manyToOne(TeamMember).nullable().deleteRule('set null'),
    action: p.string().length(64),
    data: p.json<Record<string, unknown>>().nullable(),
    targetTeamMember: () => p.manyToOne(TeamMember).nullable().deleteRule('set null'),
    targetIdentifier: p.string().length(255).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

export class TeamLog extends TeamLogSchema.class {}
TeamLogSchema.setClass(TeamLog);
