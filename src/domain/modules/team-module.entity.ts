import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { Team } from '../teams/team.entity.ts';

/** TPModules of spec 2.17. */
export const TEAM_MODULES = ['moduleApply', 'moduleGamePanel', 'moduleVoice', 'moduleBackup'] as const;
export type TeamModuleId = (typeof TEAM_MODULES)[number];

/** A module of a team (spec 2.17); a module without a row has never been switched on. */
export const TeamModuleSchema = defineEntity({
  name: 'TeamModule',
  extends: BaseSchema,
  uniques: [{ name: 'team_module_team_module_unique', properties: ['team', 'moduleId'] }],
  properties: {
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    moduleId: p.string().length(32).check(`module_id in (${TEAM_MODULES.map((id) => `'${id}'`).join(', ')})`),
    active: p.boolean().default(false),
    settings: p.json<Record<string, unknown>>().nullable(),
  },
});

export class TeamModule extends TeamModuleSchema.class {}
TeamModuleSchema.setClass(TeamModule);
