import { z } from 'zod';
import { teamLogFilterSchema } from '../../domain/team-logs/team-log-list.ts';
import { updateTeamSchema } from '../../domain/teams/team-settings.service.ts';
import { teamSchema } from './schemas.ts';
import { teamJoinInfoSchema, teamLogListSchema, teamMinimalSchema } from './team-schemas.ts';
import type { OperationDoc } from './operations.ts';

/** The team administration routes (src/http/routes/teams), described as operations.ts describes the rest. */

const base = '/v1/teams/:teamId';
const needs = (permission: string | null, more = '') =>
  `${permission ? `Needs \`${permission}\`.` : 'Any full key of the team.'} A key with scope media:upload gets 403.${more ? ` ${more}` : ''}`;
const JSON_BODY_ERRORS = { 400: 'The body is not valid JSON, or a field is invalid (the Error names it in `value`).', 413: 'The body is larger than MAX_JSON_BODY_BYTES.' };

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
      operationId: 'updateTeam', summary: 'Change the team\'s name, logo, time zone, locale or join requirements',
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
  };
}
