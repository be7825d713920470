import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { TeamMember } from '../members/team-member.entity.ts';
import { Team } from '../teams/team.entity.ts';

export const ApiKeySchema = defineEntity({
  name: 'ApiKey',
  extends: BaseSchema,
  properties: {
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    teamMember: () => p.manyToOne(TeamMember).nullable().deleteRule('cascade').index(),
    description: p.string().length(255).nullable(),
    /** The non-secret part of the key, by which it is looked up. */
    prefix: p.string().length(32).unique(),
    /** SHA-256 of the whole key; the key itself is never stored. */
    secretHash: p.string().length(64),
    /** Empty means a full key; otherwise the only scopes the key may use. */
    scopes: p.array().default([]),
    lastUsedAt: p.datetime().nullable(),
  },
});

export class ApiKey extends ApiKeySchema.class {}
ApiKeySchema.setClass(ApiKey);
