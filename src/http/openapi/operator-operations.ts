import { z } from 'zod';
import { createApiKeySchema } from '../../domain/api-keys/api-key.service.ts';
import { MAX_SEARCH_LENGTH } from '../../domain/media/media.service.ts';
import { addToGroupSchema, createGroupSchema, createMemberSchema } from '../../domain/members/member.service.ts';
import { limitsPatchSchema } from '../../domain/teams/team-limits.ts';
import { createTeamSchema } from '../../domain/teams/team.service.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';
import { paging, type OperationDoc } from './operation-doc.ts';
import { apiKeySchema, createdTeamSchema, groupSchema, planLimitsSchema, teamMemberSchema, teamSchema } from './schemas.ts';
import { apiKeyInfoListSchema } from './team-operations.ts';

/** The operator's routes for teams, members, groups, keys and limits (src/http/routes/operator/operator-routes.ts). */

export const operatorOperations: Record<string, OperationDoc> = {
  'GET /v1/admin/teams': {
    operationId: 'listTeams',
    summary: 'The teams, newest first',
    description: 'Archived teams too. `search` keeps the teams whose name contains it (any case).',
    tag: 'operator',
    access: 'authSecret',
    query: z.object({ search: z.string().max(MAX_SEARCH_LENGTH).optional().meta({ description: 'Case-insensitive part of the name.' }) }),
    headers: paging,
    responses: { 200: { description: 'One page of teams, and how many match.', schema: z.object({ data: z.array(teamSchema), count: z.int().min(0) }).meta({ id: 'TeamList' }) } },
    errors: { 400: 'Invalid search or paging header.' },
  },
  'GET /v1/admin/teams/:teamId/api-keys': {
    operationId: 'listApiKeys',
    summary: 'A team\'s API keys, newest first',
    description: 'Never a secret: a lost key is replaced (reroll) or a new one made.',
    tag: 'operator',
    access: 'authSecret',
    responses: { 200: { description: 'Every key of the team.', schema: apiKeyInfoListSchema } },
    errors: { 404: 'No such team.' },
  },
  'POST /v1/admin/teams': {
    operationId: 'createTeam',
    summary: 'Create a team with its owner and a first API key',
    tag: 'operator',
    access: 'authSecret',
    body: createTeamSchema.meta({ id: 'CreateTeamRequest' }),
    bodyRequired: true,
    responses: { 201: { description: 'Created; apiKey.key is shown only here.', schema: createdTeamSchema } },
    errors: { ...JSON_BODY_ERRORS, 400: 'Invalid name, or an unknown plan.' },
  },
  'POST /v1/admin/teams/:teamId/members': {
    operationId: 'createTeamMember',
    summary: 'Add a member',
    tag: 'operator',
    access: 'authSecret',
    body: createMemberSchema.meta({ id: 'CreateTeamMemberRequest' }),
    bodyRequired: true,
    responses: { 201: { description: 'Created.', schema: teamMemberSchema } },
    errors: { ...JSON_BODY_ERRORS, 402: 'The team has reached maxMembers.', 404: 'No such team or group.', 409: 'The name is taken in the team.' },
  },
  'POST /v1/admin/teams/:teamId/groups': {
    operationId: 'createGroup',
    summary: 'Create a group',
    tag: 'operator',
    access: 'authSecret',
    body: createGroupSchema.meta({ id: 'CreateGroupRequest' }),
    bodyRequired: true,
    responses: { 201: { description: 'Created.', schema: groupSchema } },
    errors: { ...JSON_BODY_ERRORS, 402: 'The team has reached maxGroups.', 404: 'No such team.' },
  },
  'POST /v1/admin/teams/:teamId/members/:memberId/groups': {
    operationId: 'addMemberToGroup',
    summary: 'Put a member into a group',
    description: 'The member\'s keys gain the group\'s permissions at once.',
    tag: 'operator',
    access: 'authSecret',
    body: addToGroupSchema.meta({ id: 'AddMemberToGroupRequest' }),
    bodyRequired: true,
    responses: { 204: { description: 'Added.' } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such team, member or group.', 409: 'The member is already in the group.' },
  },
  'POST /v1/admin/teams/:teamId/api-keys': {
    operationId: 'createApiKey',
    summary: 'Create an API key',
    description: 'Without teamMemberId the key acts as the owner; scopes ["media:upload"] limits it to the upload routes.',
    tag: 'operator',
    access: 'authSecret',
    body: createApiKeySchema.meta({ id: 'CreateApiKeyRequest' }),
    responses: { 201: { description: 'Created; key is shown only here.', schema: apiKeySchema } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such team or member.' },
  },
  'POST /v1/admin/api-keys/:keyId/reroll': {
    operationId: 'rerollApiKey',
    summary: 'Give a key a new secret',
    description: 'The old secret stops working at once, on every instance.',
    tag: 'operator',
    access: 'authSecret',
    responses: { 200: { description: 'The key with its new secret.', schema: apiKeySchema } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such key.' },
  },
  'DELETE /v1/admin/api-keys/:keyId': {
    operationId: 'deleteApiKey',
    summary: 'Delete a key',
    description: 'It stops working at once, on every instance.',
    tag: 'operator',
    access: 'authSecret',
    responses: { 204: { description: 'Deleted.' } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such key.' },
  },
  'PATCH /v1/admin/teams/:teamId/limits': {
    operationId: 'updateTeamLimits',
    summary: 'Override plan limits for one team',
    description: 'Any PlanLimits fields; null means unlimited.',
    tag: 'operator',
    access: 'authSecret',
    body: limitsPatchSchema.meta({ id: 'TeamLimitsPatch' }),
    bodyRequired: true,
    responses: { 200: { description: 'The team\'s effective limits.', schema: planLimitsSchema } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such team.' },
  },
};
