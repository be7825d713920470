import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { Plan } from '../plans/plan.entity.ts';
import type { PlanLimits } from '../plans/plan-limits.ts';

export const JOIN_REQUIREMENTS = ['discord', 'google', 'minecraft', 'hytale'] as const;
export type JoinRequirements = Record<(typeof JOIN_REQUIREMENTS)[number], boolean>;
export const noJoinRequirements: JoinRequirements = { discord: false, google: false, minecraft: false, hytale: false };

export const TeamSchema = defineEntity({
  name: 'Team',
  extends: BaseSchema,
  properties: {
    name: p.string().length(24).check('length(name) >= 2'),
    logo: p.text().nullable(),
    isActive: p.boolean().default(true),
    priceId: p.string().length(255).nullable(),
    plan: () => p.manyToOne(Plan).nullable().deleteRule('set null'),
    archived: p.boolean().default(false),
    setup: p.boolean().default(false),
    timezone: p.string().length(64).default('UTC'),
    locale: p.string().length(16).default('en'),
    /** Whether uploads that do not say `stripMetadata` have their images' EXIF, XMP and IPTC stripped. */
    stripMetadata: p.boolean().default(false),
    /**
     * Per-team overrides of the plan's limits, set by the operator route. Always a JSON object: a
     * string default ('{}') would be assigned at create and stored as the JSON string "{}".
     */
    limitOverrides: p
      .json<Partial<PlanLimits>>()
      .defaultRaw(`'{}'`)
      .onCreate(() => ({}))
      .check(`jsonb_typeof(limit_overrides) = 'object'`),
    /** What a user must have linked to join (spec 2.11 team join info). */
    joinRequirements: p
      .json<JoinRequirements>()
      .defaultRaw(`'{"discord":false,"google":false,"minecraft":false,"hytale":false}'`)
      .onCreate(() => ({ ...noJoinRequirements }))
      .check(`jsonb_typeof(join_requirements) = 'object'`),
    /** Bytes counted against maxTeamStorage: media, team files, to-do files and backups. */
    usedStorage: p.bigint('number').default(0).check('used_storage >= 0'),
    /** Bytes held by uploads in progress; counted by the quota check, not reported as used. */
    reservedStorage: p.bigint('number').default(0).check('reserved_storage >= 0'),
  },
});

export class Team extends TeamSchema.class {}
TeamSchema.setClass(Team);
