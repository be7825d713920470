import { z } from 'zod';
import { teamLogFilterSchema } from '../../domain/team-logs/team-log-list.ts';
import { createApiKeySchema } from '../../domain/api-keys/api-key.service.ts';
import { reorderGroupsSchema, setMemberGroupsSchema, updateGroupSchema } from '../../domain/groups/group-admin.service.ts';
import { createGroupSchema } from '../../domain/members/member.service.ts';
import { updateMemberSchema } from '../../domain/members/member-admin.service.ts';
import { bulkModuleUpdateSchema } from '../../domain/modules/team-module.service.ts';
import { acceptInviteSchema, createInviteSchema } from '../../domain/invites/invite.service.ts';
import { createNoteSchema } from '../../domain/members/member-note.service.ts';
import { updateTeamSchema } from '../../domain/teams/team-settings.service.ts';
import { setPlanSchema, setSubscriptionSchema } from '../../domain/subscriptions/subscription.service.ts';
import { apiKeySchema, groupSchema, teamMemberSchema, teamSchema } from './schemas.ts';
import {
  dashboardInfoSchema, inviteSchema, meTeamInfoSchema, subscriptionSchema, memberNoteInfoSchema, planSchema, teamModuleSchema, teamPlanSchema, teamJoinInfoSchema, teamLogListSchema, teamMemberInfoSchema, teamMemberListSchema, teamMinimalSchema,
} from './team-schemas.ts';
import { MAX_SEARCH_LENGTH } from '../../domain/media/media.service.ts';
import type { OperationDoc } from './operation-doc.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';

/** The team administration routes (src/http/routes/teams), described as the other area files (media-operations.ts, ...) describe theirs. */

const base = '/v1/teams/:teamId';
const needs = (permission: string | null, more = '') =>
  `${permission ? `Needs \`${permission}\`.` : 'Any full key of the team.'} A key with scope media:upload gets 403.${more ? ` ${more}` : ''}`;

const GRANT_RULE = 'The caller must hold every permission it gives or takes away, and every permission of a group whose members it changes (403).';

const KEY_RULE = 'The caller must hold every permission of the key (its member\'s, with its groups\'; all for a key acting as the owner): 403 otherwise.';
const apiKeyInfoSchema = apiKeySchema.omit({ key: true }).meta({ id: 'ApiKeyInfo' });
export const apiKeyInfoListSchema = z.array(apiKeyInfoSchema).meta({ id: 'ApiKeyInfoList' });

export function teamAdminOperations(paging: z.ZodObject): Record<string, OperationDoc> {
  return {
    [`GET ${base}`]: {
      operationId: 'getTeam', summary: 'The team', description: needs(null), tag: 'team', access: 'teamApiKey',
      responses: { 200: { description: 'The team.', schema: teamSchema } },
      errors: {},
    },
    [`GET ${base}/minimal`]: {
      operationId: 'getTeamMinimal', summary: 'The team\'s minimal info', description: needs(null), tag: 'team', access: 'teamApiKey',
      responses: { 200: { description: 'Id, name, logo and price id.', schema: teamMinimalSchema } },
      errors: {},
    },
    [`GET ${base}/join-info`]: {
      operationId: 'getTeamJoinInfo', summary: 'What joining the team requires', description: needs(null), tag: 'team', access: 'teamApiKey',
      responses: { 200: { description: 'Minimal info with the join requirements.', schema: teamJoinInfoSchema } },
      errors: {},
    },
    [`PATCH ${base}`]: {
      operationId: 'updateTeam', summary: 'Change the team\'s name, logo, time zone, locale, stripMetadata default or join requirements',
      description: needs('team.settings.manage', 'Logged as TEAM_UPDATED with the changed fields; a body that changes nothing logs nothing.'),
      tag: 'team', access: 'teamApiKey',
      body: updateTeamSchema.meta({ id: 'TeamUpdateRequest' }),
      bodyRequired: true,
      responses: { 200: { description: 'The team as it is now.', schema: teamSchema } },
      errors: JSON_BODY_ERRORS,
    },
    [`POST ${base}/archive`]: {
      operationId: 'archiveTeam', summary: 'Archive the team', description: needs('team.settings.manage', 'Logged as TEAM_UPDATED `{archived: true}`.'),
      tag: 'team', access: 'teamApiKey',
      responses: { 200: { description: 'The team, archived.', schema: teamSchema } },
      errors: {},
    },
    [`POST ${base}/unarchive`]: {
      operationId: 'unarchiveTeam', summary: 'Unarchive the team', description: needs('team.settings.manage', 'Logged as TEAM_UPDATED `{archived: false}`.'),
      tag: 'team', access: 'teamApiKey',
      responses: { 200: { description: 'The team, not archived.', schema: teamSchema } },
      errors: {},
    },
    [`GET ${base}/logs`]: {
      operationId: 'listTeamLogs', summary: 'The team log', description: needs('team.logs.view', 'Newest first; filters combine; from and to are inclusive.'),
      tag: 'logs', access: 'teamApiKey',
      query: teamLogFilterSchema,
      headers: paging,
      responses: { 200: { description: 'One page of log entries.', schema: teamLogListSchema } },
      errors: { 400: 'Invalid filter or paging header.' },
    },
    [`GET ${base}/members`]: {
      operationId: 'listTeamMembers', summary: 'Current members', description: needs('team.members.view', 'Members who left are not listed; by sort, then name.'),
      tag: 'members', access: 'teamApiKey',
      query: z.object({ search: z.string().max(MAX_SEARCH_LENGTH).optional().meta({ description: 'Case-insensitive part of the name.' }) }),
      headers: paging,
      responses: { 200: { description: 'One page of members.', schema: teamMemberListSchema } },
      errors: { 400: 'Invalid search or paging header.' },
    },
    [`GET ${base}/members/:memberId`]: {
      operationId: 'getTeamMember', summary: 'A member with its groups', description: needs('team.members.view', 'Members who left too (archived, with leftTeamAt).'),
      tag: 'members', access: 'teamApiKey',
      responses: { 200: { description: 'The member.', schema: teamMemberInfoSchema } },
      errors: { 404: 'No such member in the team.' },
    },
    [`PATCH ${base}/members/:memberId`]: {
      operationId: 'updateTeamMember', summary: 'Change a member\'s name, permissions, main group, sort or note',
      description: needs('team.members.manage',
        'Logged as MEMBER_UPDATED (changed fields) and MEMBER_PERMISSIONS_UPDATED (`{added, removed}`); a permission change reaches the member\'s keys at once. ' +
        'A caller can grant or take away only permissions it holds (403), and the owner keeps all.'),
      tag: 'members', access: 'teamApiKey',
      body: updateMemberSchema.meta({ id: 'TeamMemberUpdateRequest' }),
      bodyRequired: true,
      responses: { 200: { description: 'The member as it is now.', schema: teamMemberInfoSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No current member of that id, or mainGroupId names no group of the member.', 409: 'The name is taken in the team.' },
    },
    [`DELETE ${base}/members/:memberId`]: {
      operationId: 'kickTeamMember', summary: 'Kick a member',
      description: needs('team.members.manage', 'Logged as MEMBER_KICKED; the member stays archived with leftTeamAt, and its keys stop working at once. The owner cannot be kicked (403).'),
      tag: 'members', access: 'teamApiKey',
      responses: { 204: { description: 'Kicked.' } },
      errors: { 404: 'No current member of that id.' },
    },
    [`POST ${base}/leave`]: {
      operationId: 'leaveTeam', summary: 'The key\'s member leaves the team',
      description: needs(null, 'Logged as MEMBER_LEFT; the key stops working. The owner (and a key acting as the owner) cannot leave without a transfer (403).'),
      tag: 'members', access: 'teamApiKey',
      responses: { 204: { description: 'Left.' } },
      errors: {},
    },
    [`GET ${base}/members/:memberId/notes`]: {
      operationId: 'listTeamMemberNotes', summary: 'Notes about a member', description: needs('team.members.view', 'Newest first.'),
      tag: 'members', access: 'teamApiKey',
      responses: { 200: { description: 'The notes.', schema: z.array(memberNoteInfoSchema).meta({ id: 'TeamMemberNoteList' }) } },
      errors: { 404: 'No such member in the team.' },
    },
    [`POST ${base}/members/:memberId/notes`]: {
      operationId: 'createTeamMemberNote', summary: 'Write a note about a member', description: needs('team.members.manage', 'Logged as MEMBER_NOTE_CREATED.'),
      tag: 'members', access: 'teamApiKey',
      body: createNoteSchema.meta({ id: 'TeamMemberNoteCreateRequest' }),
      bodyRequired: true,
      responses: { 201: { description: 'Created.', schema: memberNoteInfoSchema } },
      errors: { ...JSON_BODY_ERRORS, 402: 'The member has maxMemberNotes notes (error.teamLimits.maxMemberNotes).', 404: 'No such member in the team.' },
    },
    [`DELETE ${base}/members/:memberId/notes/:noteId`]: {
      operationId: 'deleteTeamMemberNote', summary: 'Delete a note', description: needs('team.members.manage', 'Logged as MEMBER_NOTE_DELETED.'),
      tag: 'members', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such member, or no such note about the member.' },
    },
    [`GET ${base}/dashboard`]: {
      operationId: 'getTeamDashboard', summary: 'Dashboard info for the key\'s member', description: needs(null, 'A key linked to no member sees the owner.'),
      tag: 'members', access: 'teamApiKey',
      responses: { 200: { description: 'The member and the member count.', schema: dashboardInfoSchema } },
      errors: {},
    },
    [`GET ${base}/me`]: {
      operationId: 'getTeamMe', summary: 'The caller\'s own view of the team',
      description: needs(null, 'Its member with groups, the team with its plan, the TEAM subscription and the trial offer. A key linked to no member sees the owner.'),
      tag: 'members', access: 'teamApiKey',
      responses: { 200: { description: 'Me team info (spec 2.13).', schema: meTeamInfoSchema } },
      errors: {},
    },
    [`GET ${base}/groups`]: {
      operationId: 'listTeamGroups', summary: 'The team\'s groups', description: needs('team.members.view', 'By sort, then name.'),
      tag: 'groups', access: 'teamApiKey',
      responses: { 200: { description: 'Every group of the team.', schema: z.array(groupSchema).meta({ id: 'GroupList' }) } },
      errors: {},
    },
    [`POST ${base}/groups`]: {
      operationId: 'createTeamGroup', summary: 'Create a group',
      description: needs('team.groups.manage', `Logged as GROUP_CREATED. ${GRANT_RULE}`),
      tag: 'groups', access: 'teamApiKey',
      body: createGroupSchema,
      bodyRequired: true,
      responses: { 201: { description: 'Created.', schema: groupSchema } },
      errors: { ...JSON_BODY_ERRORS, 402: 'The team has reached maxGroups (error.teamLimits.maxGroups).' },
    },
    [`PUT ${base}/groups/order`]: {
      operationId: 'reorderTeamGroups', summary: 'Reorder groups', description: needs('team.groups.manage', 'Logged as GROUPS_UPDATED.'),
      tag: 'groups', access: 'teamApiKey',
      body: reorderGroupsSchema.meta({ id: 'GroupReorderRequest' }),
      bodyRequired: true,
      responses: { 200: { description: 'Every group, in the new order.', schema: z.array(groupSchema) } },
      errors: { ...JSON_BODY_ERRORS, 404: 'An id names no group of the team.' },
    },
    [`PATCH ${base}/groups/:groupId`]: {
      operationId: 'updateTeamGroup', summary: 'Change a group\'s name, colour, permissions or sort',
      description: needs('team.groups.manage', `Logged as GROUP_UPDATED; a permission change reaches the members' keys at once. ${GRANT_RULE}`),
      tag: 'groups', access: 'teamApiKey',
      body: updateGroupSchema.meta({ id: 'GroupUpdateRequest' }),
      bodyRequired: true,
      responses: { 200: { description: 'The group as it is now.', schema: groupSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such group in the team.' },
    },
    [`DELETE ${base}/groups/:groupId`]: {
      operationId: 'deleteTeamGroup', summary: 'Delete a group',
      description: needs('team.groups.manage', `Logged as GROUP_DELETED; its members lose its permissions at once. ${GRANT_RULE}`),
      tag: 'groups', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such group in the team.' },
    },
    [`PUT ${base}/groups/:groupId/members/:memberId`]: {
      operationId: 'addTeamGroupMember', summary: 'Put a member into a group',
      description: needs('team.groups.manage', `Logged as MEMBER_GROUP_ADDED; the member's keys gain the group's permissions at once. ${GRANT_RULE}`),
      tag: 'groups', access: 'teamApiKey',
      responses: { 204: { description: 'Added.' } },
      errors: { 404: 'No such group or current member in the team.', 409: 'The member is already in the group.' },
    },
    [`PUT ${base}/members/:memberId/groups`]: {
      operationId: 'setTeamMemberGroups', summary: 'Set every group a member is in',
      description: needs('team.groups.manage', `Logged as MEMBER_GROUPS_CHANGED \`{added, removed}\` (nothing when nothing changes); the member's keys change at once. A main group the member leaves is cleared. ${GRANT_RULE}`),
      tag: 'groups', access: 'teamApiKey',
      body: setMemberGroupsSchema.meta({ id: 'MemberGroupsRequest' }),
      bodyRequired: true,
      responses: { 200: { description: 'The member\'s groups now.', schema: z.array(groupSchema) } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such current member, or an id names no group of the team.' },
    },
    [`DELETE ${base}/groups/:groupId/members/:memberId`]: {
      operationId: 'removeTeamGroupMember', summary: 'Take a member out of a group',
      description: needs('team.groups.manage', `Logged as MEMBER_GROUP_REMOVED; the member's keys lose the group's permissions at once. ${GRANT_RULE}`),
      tag: 'groups', access: 'teamApiKey',
      responses: { 204: { description: 'Removed.' } },
      errors: { 404: 'No such group or member, or the member is not in the group.' },
    },
    [`GET ${base}/modules`]: {
      operationId: 'listTeamModules', summary: 'The team\'s modules', description: needs(null, 'Modules never switched have no entry.'),
      tag: 'modules', access: 'teamApiKey',
      responses: { 200: { description: 'The modules, by moduleId.', schema: z.array(teamModuleSchema).meta({ id: 'TeamModuleList' }) } },
      errors: {},
    },
    [`PATCH ${base}/modules`]: {
      operationId: 'updateTeamModules', summary: 'Switch modules on or off',
      description: needs('team.modules.manage', 'Each real change is logged as MODULE_ACTIVATED or MODULE_DEACTIVATED; a module may be named once.'),
      tag: 'modules', access: 'teamApiKey',
      body: bulkModuleUpdateSchema.meta({ id: 'BulkModuleUpdateRequest' }),
      bodyRequired: true,
      responses: { 200: { description: 'Every module of the team as it is now.', schema: z.array(teamModuleSchema) } },
      errors: JSON_BODY_ERRORS,
    },
    [`GET ${base}/invites`]: {
      operationId: 'listTeamInvites', summary: 'The team\'s invites', description: needs('team.invites.manage', 'Newest first, used and expired ones too.'),
      tag: 'invites', access: 'teamApiKey',
      responses: { 200: { description: 'The invites.', schema: z.array(inviteSchema).meta({ id: 'InviteList' }) } },
      errors: {},
    },
    [`POST ${base}/invites`]: {
      operationId: 'createTeamInvite', summary: 'Invite into a group',
      description: needs('team.invites.manage', 'Logged as INVITE_CREATED. The caller must hold every permission of the group (403).'),
      tag: 'invites', access: 'teamApiKey',
      body: createInviteSchema.meta({ id: 'InviteCreateRequest' }),
      bodyRequired: true,
      responses: { 201: { description: 'Created.', schema: inviteSchema } },
      errors: { ...JSON_BODY_ERRORS, 402: 'isMultiUse on a plan without multiUseInvites (error.teamLimits.multiUseInvites).', 404: 'No such group in the team.' },
    },
    [`DELETE ${base}/invites`]: {
      operationId: 'clearTeamInvites', summary: 'Delete every invite', description: needs('team.invites.manage', 'Logged as INVITES_CLEAR.'),
      tag: 'invites', access: 'teamApiKey',
      responses: { 200: { description: 'How many were deleted.', schema: z.object({ deleted: z.number().int().min(0) }).meta({ id: 'InvitesCleared' }) } },
      errors: {},
    },
    [`DELETE ${base}/invites/:inviteId`]: {
      operationId: 'deleteTeamInvite', summary: 'Delete an invite', description: needs('team.invites.manage', 'Logged as INVITE_DELETED.'),
      tag: 'invites', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such invite in the team.' },
    },
    'POST /v1/admin/invites/:inviteId/accept': {
      operationId: 'acceptInvite', summary: 'Accept an invite for a user',
      description: 'The operator accepts on a user\'s behalf (users accept themselves with POST /v1/invites/{inviteId}/accept). Makes a member in the invite\'s group (its main group), logged as MEMBER_JOINED. ' +
        'A single-use invite makes one member, even under concurrent accepts. A user who left or was kicked gets its member row back ' +
        '(same id, no permissions of its own, only the invite\'s group; MEMBER_JOINED `{rejoined: true}`); keys made for it before are deleted.',
      tag: 'operator', access: 'authSecret',
      body: acceptInviteSchema.meta({ id: 'InviteAcceptRequest' }),
      bodyRequired: true,
      responses: { 201: { description: 'The new member.', schema: teamMemberSchema } },
      errors: {
        ...JSON_BODY_ERRORS,
        402: 'The team has reached maxMembers (error.teamLimits.maxMembers).',
        403: 'A join requirement of the team is not met by the user\'s linked accounts (`value` names it), or the team is archived.',
        404: 'No such invite, or it has expired or been used; or no such user.',
        409: 'The user is a current member of the team, or a current member has the name.',
      },
    },
    'GET /v1/plans': {
      operationId: 'listPlans', summary: 'The public plans', description: 'No key needed. By position; prices in the smallest currency unit.',
      tag: 'plans', access: 'public',
      responses: { 200: { description: 'Every public plan with its limits and prices.', schema: z.array(planSchema).meta({ id: 'PlanList' }) } },
      errors: {},
    },
    [`GET ${base}/plan`]: {
      operationId: 'getTeamPlan', summary: 'The team\'s plan and effective limits', description: needs(null, 'limits: the plan\'s with the team\'s overrides on top; null is unlimited.'),
      tag: 'plans', access: 'teamApiKey',
      responses: { 200: { description: 'Plan, overrides, effective limits and the TEAM subscription.', schema: teamPlanSchema } },
      errors: {},
    },
    [`GET ${base}/subscriptions`]: {
      operationId: 'listTeamSubscriptions', summary: 'The team\'s subscriptions', description: needs(null, 'At most one per type, TEAM first; ended ones too.'),
      tag: 'plans', access: 'teamApiKey',
      responses: { 200: { description: 'The subscriptions.', schema: z.array(subscriptionSchema).meta({ id: 'SubscriptionList' }) } },
      errors: {},
    },
    'PUT /v1/admin/teams/:teamId/plan': {
      operationId: 'setTeamPlan', summary: 'Move a team to a plan',
      description: 'Logged as TEAM_UPDATED `{plan: {from, to, slug}}`. Every instance applies the new limits at once.',
      tag: 'operator', access: 'authSecret',
      body: setPlanSchema.meta({ id: 'SetTeamPlanRequest' }),
      bodyRequired: true,
      responses: { 200: { description: 'The team\'s plan, overrides, effective limits and TEAM subscription.', schema: teamPlanSchema } },
      errors: { ...JSON_BODY_ERRORS, 400: 'Invalid body or an unknown plan.', 404: 'No such team.' },
    },
    'PUT /v1/admin/teams/:teamId/subscription': {
      operationId: 'setTeamSubscription', summary: 'Set a team\'s subscription (as data, no payment provider)',
      description: 'Creates or replaces the team\'s subscription of `type`; fields left out take their defaults. A TEAM subscription moves the team to its plan. ' +
        'The subscription job ends a canceled subscription at endsAt (or canceledAt) and a trial at trialEndsAt (unless it goes on: nextPaymentAt and not canceled); ' +
        'an ended TEAM subscription puts the team back on the default plan. Logged as TEAM_UPDATED.',
      tag: 'operator', access: 'authSecret',
      body: setSubscriptionSchema.meta({ id: 'SetSubscriptionRequest' }),
      bodyRequired: true,
      responses: { 200: { description: 'The subscription.', schema: subscriptionSchema } },
      errors: { ...JSON_BODY_ERRORS, 400: 'Invalid field (trialEndsAt without isTrialing, endsAt without canceledAt, ...) or an unknown plan.', 404: 'No such team or user.' },
    },
    [`GET ${base}/api-keys`]: {
      operationId: 'listTeamApiKeys', summary: 'The team\'s API keys', description: needs('team.apiKeys.manage', 'Newest first; never a secret.'),
      tag: 'apiKeys', access: 'teamApiKey',
      responses: { 200: { description: 'Every key of the team.', schema: apiKeyInfoListSchema } },
      errors: {},
    },
    [`POST ${base}/api-keys`]: {
      operationId: 'createTeamApiKey', summary: 'Create an API key',
      description: needs('team.apiKeys.manage', `Logged as API_KEY_CREATED. Without teamMemberId the key acts as the owner. ${KEY_RULE}`),
      tag: 'apiKeys', access: 'teamApiKey',
      body: createApiKeySchema,
      responses: { 201: { description: 'Created; key is shown only here.', schema: apiKeySchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'teamMemberId names no current member of the team.' },
    },
    [`POST ${base}/api-keys/:keyId/reroll`]: {
      operationId: 'rerollTeamApiKey', summary: 'Give a key a new secret',
      description: needs('team.apiKeys.manage', `The old secret stops working at once, on every instance. ${KEY_RULE}`),
      tag: 'apiKeys', access: 'teamApiKey',
      responses: { 200: { description: 'The key with its new secret.', schema: apiKeySchema } },
      errors: { 404: 'No such key in the team.' },
    },
    [`DELETE ${base}/api-keys/:keyId`]: {
      operationId: 'deleteTeamApiKey', summary: 'Delete a key',
      description: needs('team.apiKeys.manage', `Logged as API_KEY_DELETED; the key stops working at once, on every instance. ${KEY_RULE}`),
      tag: 'apiKeys', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such key in the team.' },
    },
  };
}
