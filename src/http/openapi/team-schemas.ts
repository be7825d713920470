import { z } from 'zod';
import { TEAM_MODULES } from '../../domain/modules/team-module.entity.ts';
import { MEETING_STATES } from '../../domain/meetings/meeting-states.ts';
import { DASHBOARD_MEETINGS } from '../../domain/meetings/upcoming-meetings.ts';
import { LOG_SYSTEMS } from '../../domain/team-logs/team-log-list.ts';
import { BILLING_CYCLES, SUBSCRIPTION_TYPES } from '../../domain/subscriptions/subscription.entity.ts';
import { groupSchema, planLimitsSchema, teamMemberSchema, teamSchema } from './schemas.ts';

/** Response bodies of the team administration routes (spec 2.11, 2.13, 2.19); see ./schemas.ts. */

const id = z.uuid();
const timestamp = z.iso.datetime();

export const teamMinimalSchema = z
  .object({ id, name: z.string(), logo: z.string().nullable(), priceId: z.string().nullable() })
  .meta({ id: 'TeamMinimalInfo' });

export const minimalAccountSchema = z
  .object({
    accountId: z.string().meta({ description: 'The provider\'s id of the account: the user id for credential, the OAuth subject, the player UUID for manual game accounts.' }),
    providerId: z.string().meta({ description: 'credential, discord, google, minecraft-manual or hytale-manual.' }),
    data: z.record(z.string(), z.unknown()).nullable().meta({
      description: 'discord `{username}`, google `{email}`, minecraft-manual and hytale-manual `{username, targetId}`; null for credential.',
    }),
  })
  .meta({ id: 'MinimalAccountInfo', description: 'Never tokens, never the password.' });

export const teamJoinInfoSchema = teamMinimalSchema
  .extend({
    requirements: z
      .object({ discord: z.boolean(), google: z.boolean(), minecraft: z.boolean(), hytale: z.boolean() })
      .meta({ id: 'TeamJoinRequirements', description: 'Accounts a user must have linked to join: discord, google, minecraft-manual (minecraft), hytale-manual (hytale).' }),
    connections: z.array(minimalAccountSchema).meta({
      description: 'The signed-in user\'s linked accounts (minimal account info); empty for a team API key.',
    }),
  })
  .meta({ id: 'TeamJoinInfo' });

export const memberShortSchema = z
  .object({ id, userId: id, name: z.string(), image: z.string().nullable(), joinedTeamAt: timestamp })
  .meta({ id: 'TeamMemberShortInfo' });

export const teamLogSchema = z
  .object({
    id,
    system: z.enum(LOG_SYSTEMS),
    teamId: id,
    teamMemberId: id.nullable().meta({ description: 'Who acted: the key\'s member, or the owner for a key linked to no member; null only for the operator and the service\'s own jobs.' }),
    action: z.string().meta({ description: 'A LogAction of spec 2.19, or AUTOMATION_CREATED/UPDATED/DELETED.' }),
    data: z.record(z.string(), z.unknown()).nullable(),
    targetTeamMemberId: id.nullable(),
    targetIdentifier: z.string().nullable(),
    createdAt: timestamp,
    teamMember: memberShortSchema.nullable(),
    targetTeamMember: memberShortSchema.nullable(),
  })
  .meta({ id: 'TeamLog' });

export const teamLogListSchema = z
  .object({ data: z.array(teamLogSchema), count: z.number().int().min(0).meta({ description: 'Entries matching the filters, on all pages.' }) })
  .meta({ id: 'TeamLogList' });

const userShortSchema = z
  .object({ username: z.string(), accounts: z.array(z.unknown()).meta({ description: 'Linked accounts; empty until user accounts exist.' }) })
  .meta({ id: 'TeamMemberUser' });

export const teamMemberInfo2Schema = teamMemberSchema
  .extend({
    mainGroup: z.object({ id, name: z.string(), color: z.string(), sort: z.number().int() }).nullable(),
    user: userShortSchema.nullable(),
  })
  .meta({ id: 'TeamMemberInfo2' });

export const teamMemberListSchema = z
  .object({ data: z.array(teamMemberInfo2Schema), count: z.number().int().min(0) })
  .meta({ id: 'TeamMemberList' });

export const teamMemberInfoSchema = teamMemberSchema
  .extend({ groups: z.array(groupSchema), mainGroup: groupSchema.nullable(), user: userShortSchema.nullable() })
  .meta({ id: 'TeamMemberInfo' });

export const minimalMeetingSchema = z
  .object({ id, title: z.string(), dateTime: timestamp, state: z.enum(MEETING_STATES), meetingPoint: z.string().nullable() })
  .meta({ id: 'MeetingMinimal' });

export const dashboardInfoSchema = z
  .object({
    member: teamMemberSchema,
    memberCount: z.number().int().min(0),
    meetings: z.array(minimalMeetingSchema).meta({
      description: `The member's PLANNED and RUNNING meetings (named, through a group, or without participants), soonest first, at most ${DASHBOARD_MEETINGS}.`,
    }),
  })
  .meta({ id: 'DashboardInfo' });

export const memberNoteInfoSchema = z
  .object({
    id, teamId: id, teamMemberId: id, note: z.string().min(1), creatorTeamMemberId: id.nullable(), createdAt: timestamp,
    creatorTeamMember: memberShortSchema.nullable().meta({ description: 'Who wrote it (the owner for a key linked to no member); null for the operator.' }),
  })
  .meta({ id: 'TeamMemberNoteInfo' });

export const teamModuleSchema = z
  .object({ id, teamId: id, moduleId: z.enum(TEAM_MODULES), active: z.boolean(), createdAt: timestamp, updatedAt: timestamp, settings: z.record(z.string(), z.unknown()).nullable() })
  .meta({ id: 'TeamModule' });

export const planSchema = z
  .object({
    id, name: z.string(), slug: z.string(), color: z.string(), level: z.number().int(),
    monthlyPriceIds: z.array(z.string()), yearlyPriceIds: z.array(z.string()), monthlyPrice: z.number().int(), yearlyPrice: z.number().int(),
    isPublic: z.boolean(), isDefault: z.boolean(), position: z.number().int(),
    limits: planLimitsSchema, createdAt: timestamp, updatedAt: timestamp,
  })
  .meta({ id: 'Plan' });

export const subscriptionSchema = z
  .object({
    id, subscriptionId: z.string(), priceId: z.string(), userId: id, checkedAt: timestamp, createdAt: timestamp, updatedAt: timestamp,
    lastPaymentFailed: z.boolean(), type: z.enum(SUBSCRIPTION_TYPES), billingCycle: z.enum(BILLING_CYCLES),
    nextPaymentAt: timestamp.nullable(), endsAt: timestamp.nullable(), canceledAt: timestamp.nullable(),
    pendingPriceId: z.string().nullable(), pendingBillingCycle: z.enum(BILLING_CYCLES).nullable(), stripeScheduleId: z.string().nullable(),
    teamId: id.nullable(), planId: id.nullable(), isTrialing: z.boolean(), trialEndsAt: timestamp.nullable(),
  })
  .meta({ id: 'Subscription' });

export const teamPlanSchema = z
  .object({
    plan: planSchema.nullable(),
    overrides: z.record(z.string(), z.unknown()).meta({ description: 'The team\'s own limits, set by the operator, over the plan\'s.' }),
    limits: planLimitsSchema,
    subscription: subscriptionSchema.nullable().meta({ description: 'The team\'s TEAM subscription; null when it never had one.' }),
  })
  .meta({ id: 'TeamPlan' });

export const meTeamInfoSchema = z
  .object({
    member: teamMemberInfoSchema.meta({ description: 'The key\'s member; the owner for a key linked to no member (it acts as the owner).' }),
    team: teamSchema.extend({ plan: planSchema.nullable() }).meta({ id: 'TeamWithPlan' }),
    subscription: subscriptionSchema.nullable().meta({ description: 'The TEAM subscription; null when the team never had one.' }),
    trialEligible: z.boolean().meta({ description: 'True while the team never had a TEAM subscription.' }),
    trialDays: z.number().int().min(0).meta({ description: 'Days of the trial offered.' }),
  })
  .meta({ id: 'MeTeamInfo' });

export const inviteSchema = z
  .object({ id, teamId: id, groupId: id, isUsed: z.boolean(), isMultiUse: z.boolean(), createdAt: timestamp, expireDate: timestamp })
  .meta({ id: 'Invite' });
