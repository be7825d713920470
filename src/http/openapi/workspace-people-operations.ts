import { z } from 'zod';
import { assignGroupSchema, assignMemberSchema } from '../../domain/accesses/access-assignment.service.ts';
import { createAccessSchema, updateAccessSchema } from '../../domain/accesses/team-access.service.ts';
import { givePenaltyPointsSchema, memberPenaltyFilterSchema, penaltyFilterSchema } from '../../domain/penalty-points/penalty-point.service.ts';
import { createTagSchema, tagFilterSchema, updateTagSchema } from '../../domain/team-tags/team-tag.service.ts';
import { answerWorrySchema, createWorrySchema, worryFilterSchema } from '../../domain/worry-box/worry-box.service.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';
import type { OperationDoc } from './operation-doc.ts';
import { groupSchema } from './schemas.ts';
import { memberShortSchema } from './team-schemas.ts';

/** Penalty points, the worry box, team tags and accesses (src/http/routes/teams/workspace-people-routes.ts; docs/workspace.md). */

const base = '/v1/teams/:teamId';
const id = z.uuid();
const timestamp = z.iso.datetime();
const count = z.number().int().min(0);
const needs = (permission: string | null, more = '') =>
  `${permission ? `Needs \`${permission}\`.` : 'Any full key of the team.'} A key with scope media:upload gets 403.${more ? ` ${more}` : ''}`;

export const penaltyPointSchema = z
  .object({
    id, teamId: id, teamMemberId: id, committerId: id.nullable().meta({ description: 'Who gave them (the owner for a key linked to no member).' }),
    createdAt: timestamp, expiresAt: timestamp, message: z.string(), points: z.number().int().min(1),
  })
  .meta({ id: 'PenaltyPoint' });
const penaltyPointListSchema = z.object({ data: z.array(penaltyPointSchema), count }).meta({ id: 'PenaltyPointList', description: 'Newest first, one page.' });
const memberPenaltyPointListSchema = z
  .object({ data: z.array(penaltyPointSchema), count, totalPoints: count.meta({ description: 'The member\'s current total: the points that have not expired.' }) })
  .meta({ id: 'MemberPenaltyPointList', description: 'Newest first, one page.' });

export const worryBoxEntrySchema = z
  .object({
    id, teamId: id,
    teamMemberId: id.nullable().meta({ description: 'The author; always null for an anonymous entry, in every answer, to everyone (its author included).' }),
    isAnonymous: z.boolean(), message: z.string().min(1), createdAt: timestamp, forGroupId: id,
    answeredAt: timestamp.nullable(), answer: z.string().nullable(), handledByTeamMemberId: id.nullable().meta({ description: 'Who answered.' }),
  })
  .meta({ id: 'WorryBox' });
const worryBoxEntriesSchema = z
  .object({ totalEntries: count.meta({ description: 'Entries matching, on all pages.' }), entries: z.array(worryBoxEntrySchema) })
  .meta({ id: 'WorryBoxEntries', description: 'Newest first, one page.' });

export const teamTagSchema = z
  .object({ id, teamId: id, name: z.string(), slug: z.string(), createdAt: timestamp, updatedAt: timestamp, color: z.string().nullable(), icon: z.string().nullable() })
  .meta({ id: 'TeamTag' });
const teamTagListSchema = z.object({ data: z.array(teamTagSchema), count }).meta({ id: 'TeamTagList', description: 'By name, one page.' });

export const teamAccessSchema = z
  .object({ id, teamId: id, name: z.string().min(1), description: z.string().nullable(), icon: z.string().max(64).nullable(), createdAt: timestamp, updatedAt: timestamp })
  .meta({ id: 'TeamAccess' });
const teamAccessWithCountSchema = teamAccessSchema
  .extend({ assignmentCount: count.meta({ description: 'Direct assignments in force.' }), groupAssignmentCount: count.meta({ description: 'Group assignments in force.' }) })
  .meta({ id: 'TeamAccessWithCount' });
const assignmentFields = {
  id, accessId: id, note: z.string().nullable(), assignedAt: timestamp, expiresAt: timestamp.nullable().meta({ description: 'Null: never expires.' }),
  assignedById: id.nullable(), assignedBy: memberShortSchema.nullable(),
};
export const accessAssignmentSchema = z.object({ ...assignmentFields, teamMemberId: id, teamMember: memberShortSchema }).meta({ id: 'TeamAccessAssignment' });
export const accessGroupAssignmentSchema = z.object({ ...assignmentFields, groupId: id, group: groupSchema }).meta({ id: 'TeamAccessGroupAssignment' });
const teamAccessDetailSchema = teamAccessSchema
  .extend({ assignments: z.array(accessAssignmentSchema), groupAssignments: z.array(accessGroupAssignmentSchema) })
  .meta({ id: 'TeamAccessDetail', description: 'Only assignments in force, oldest first.' });
const memberAccessAssignmentSchema = z
  .union([
    accessAssignmentSchema.extend({ source: z.literal('direct'), access: teamAccessSchema }).meta({ id: 'MemberDirectAccessAssignment' }),
    accessGroupAssignmentSchema.extend({ source: z.literal('group'), access: teamAccessSchema }).meta({ id: 'MemberGroupAccessAssignment' }),
  ])
  .meta({ id: 'MemberAccessAssignment' });
const memberAccessListSchema = z
  .object({ data: z.array(memberAccessAssignmentSchema), count })
  .meta({ id: 'MemberAccessAssignmentList', description: 'Every assignment in force that reaches the member, by access name: direct, then through each of its groups.' });

const IN_FORCE = 'Only assignments in force count: not expired, and for a member made since it last joined.';

export function workspacePeopleOperations(paging: z.ZodObject): Record<string, OperationDoc> {
  return {
    [`GET ${base}/penalty-points`]: {
      operationId: 'listPenaltyPoints', summary: 'The team\'s penalty points', description: needs('team.penalties.view', 'Unexpired ones unless includeExpired=true.'),
      tag: 'penaltyPoints', access: 'teamApiKey', query: penaltyFilterSchema, headers: paging,
      responses: { 200: { description: 'One page of points.', schema: penaltyPointListSchema } },
      errors: { 400: 'Invalid filter or paging header.' },
    },
    [`GET ${base}/members/:memberId/penalty-points`]: {
      operationId: 'listMemberPenaltyPoints', summary: 'A member\'s penalty points and current total',
      description: needs(null, 'Needs `team.penalties.view`, except for the caller\'s own member. Unexpired ones unless includeExpired=true; totalPoints counts unexpired points only.'),
      tag: 'penaltyPoints', access: 'teamApiKey', query: memberPenaltyFilterSchema, headers: paging,
      responses: { 200: { description: 'One page of the member\'s points, with its total.', schema: memberPenaltyPointListSchema } },
      errors: { 400: 'Invalid filter or paging header.', 404: 'No member of that id in the team.' },
    },
    [`POST ${base}/members/:memberId/penalty-points`]: {
      operationId: 'givePenaltyPoints', summary: 'Give a member penalty points',
      description: needs('team.penalties.manage', 'Not to the caller\'s own member (403). Logged as PENALTY_POINT_CREATED.'),
      tag: 'penaltyPoints', access: 'teamApiKey', body: givePenaltyPointsSchema.meta({ id: 'PenaltyPointCreateRequest' }), bodyRequired: true,
      responses: { 201: { description: 'The points.', schema: penaltyPointSchema } },
      errors: { ...JSON_BODY_ERRORS, 403: 'Missing permission, archived team, or the caller\'s own member.', 404: 'No current member of that id in the team.' },
    },
    [`DELETE ${base}/penalty-points/:pointId`]: {
      operationId: 'deletePenaltyPoints', summary: 'Delete penalty points', description: needs('team.penalties.manage', 'Logged as PENALTY_POINT_DELETED.'),
      tag: 'penaltyPoints', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such points in the team.' },
    },
    [`POST ${base}/worry-box`]: {
      operationId: 'createWorryBoxEntry', summary: 'Write to the worry box',
      description: needs(null, 'The caller must be a member in person (a session, or a key linked to a member): a key linked to no member gets 403. Nothing is logged.'),
      tag: 'worryBox', access: 'teamApiKey', body: createWorrySchema.meta({ id: 'WorryBoxCreateRequest' }), bodyRequired: true,
      responses: { 201: { description: 'The entry.', schema: worryBoxEntrySchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No group of that id in the team.' },
    },
    [`GET ${base}/worry-box`]: {
      operationId: 'listWorryBoxEntries', summary: 'Worry box entries for the caller\'s groups',
      description: needs(null, 'The entries for groups the caller is in; with `team.worryBox.manage`, every group\'s.'),
      tag: 'worryBox', access: 'teamApiKey', query: worryFilterSchema, headers: paging,
      responses: { 200: { description: 'One page of entries.', schema: worryBoxEntriesSchema } },
      errors: { 400: 'Invalid filter or paging header.' },
    },
    [`GET ${base}/worry-box/mine`]: {
      operationId: 'listOwnWorryBoxEntries', summary: 'The caller\'s own worry box entries, anonymous ones included',
      description: needs(null, 'A member in person only (403 for a key linked to no member).'),
      tag: 'worryBox', access: 'teamApiKey', headers: paging,
      responses: { 200: { description: 'One page of entries.', schema: worryBoxEntriesSchema } },
      errors: { 400: 'Invalid paging header.' },
    },
    [`GET ${base}/worry-box/:entryId`]: {
      operationId: 'getWorryBoxEntry', summary: 'A worry box entry', description: needs(null, 'For a member of its group, a holder of `team.worryBox.manage`, or its author.'),
      tag: 'worryBox', access: 'teamApiKey',
      responses: { 200: { description: 'The entry.', schema: worryBoxEntrySchema } },
      errors: { 404: 'No such entry that the caller may read.' },
    },
    [`POST ${base}/worry-box/:entryId/answer`]: {
      operationId: 'answerWorryBoxEntry', summary: 'Answer a worry box entry (once)',
      description: needs(null, 'For a member of its group or a holder of `team.worryBox.manage`; never its author (403). Once: a second answer, on any instance, is 409.'),
      tag: 'worryBox', access: 'teamApiKey', body: answerWorrySchema.meta({ id: 'WorryBoxAnswerRequest' }), bodyRequired: true,
      responses: { 200: { description: 'The entry, answered.', schema: worryBoxEntrySchema } },
      errors: { ...JSON_BODY_ERRORS, 403: 'Archived team, or the caller wrote the entry.', 404: 'No such entry that the caller may read.', 409: 'The entry is answered already.' },
    },
    [`DELETE ${base}/worry-box/:entryId`]: {
      operationId: 'deleteWorryBoxEntry', summary: 'Delete a worry box entry', description: needs('team.worryBox.manage'),
      tag: 'worryBox', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such entry in the team.' },
    },
    [`GET ${base}/team-tags`]: {
      operationId: 'listTeamTags', summary: 'The team\'s tags', description: needs(null, 'By name; todoId narrows to the tags on one to-do.'),
      tag: 'teamTags', access: 'teamApiKey', query: tagFilterSchema, headers: paging,
      responses: { 200: { description: 'One page of tags.', schema: teamTagListSchema } },
      errors: { 400: 'Invalid filter or paging header.', 404: 'No to-do of that id in the team.' },
    },
    [`POST ${base}/team-tags`]: {
      operationId: 'createTeamTag', summary: 'Create a team tag', description: needs('team.tags.manage', 'With todoId also `team.todos.manage`; the tag is put on that to-do.'),
      tag: 'teamTags', access: 'teamApiKey', body: createTagSchema.meta({ id: 'TeamTagCreateRequest' }), bodyRequired: true,
      responses: { 201: { description: 'The tag.', schema: teamTagSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No to-do of that id in the team.', 409: 'The team has a tag with that slug.' },
    },
    [`GET ${base}/team-tags/:tagId`]: {
      operationId: 'getTeamTag', summary: 'A team tag', description: needs(null),
      tag: 'teamTags', access: 'teamApiKey',
      responses: { 200: { description: 'The tag.', schema: teamTagSchema } },
      errors: { 404: 'No such tag in the team.' },
    },
    [`PATCH ${base}/team-tags/:tagId`]: {
      operationId: 'updateTeamTag', summary: 'Change a team tag', description: needs('team.tags.manage', 'A new name makes a new slug.'),
      tag: 'teamTags', access: 'teamApiKey', body: updateTagSchema.meta({ id: 'TeamTagUpdateRequest' }), bodyRequired: true,
      responses: { 200: { description: 'The tag as it is now.', schema: teamTagSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such tag in the team.', 409: 'The team has a tag with that slug.' },
    },
    [`DELETE ${base}/team-tags/:tagId`]: {
      operationId: 'deleteTeamTag', summary: 'Delete a team tag', description: needs('team.tags.manage', 'It comes off every to-do.'),
      tag: 'teamTags', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such tag in the team.' },
    },
    [`PUT ${base}/todos/:todoId/team-tags/:tagId`]: {
      operationId: 'attachTeamTag', summary: 'Put a team tag on a to-do', description: needs('team.todos.manage', 'Again is a no-op.'),
      tag: 'teamTags', access: 'teamApiKey',
      responses: { 204: { description: 'The tag is on the to-do.' } },
      errors: { 404: 'No such to-do or tag in the team.' },
    },
    [`DELETE ${base}/todos/:todoId/team-tags/:tagId`]: {
      operationId: 'detachTeamTag', summary: 'Take a team tag off a to-do', description: needs('team.todos.manage', 'A tag not on the to-do is a no-op.'),
      tag: 'teamTags', access: 'teamApiKey',
      responses: { 204: { description: 'The tag is not on the to-do.' } },
      errors: { 404: 'No such to-do or tag in the team.' },
    },
    [`GET ${base}/accesses`]: {
      operationId: 'listTeamAccesses', summary: 'The team\'s accesses with their assignment counts', description: needs('team.accesses.view', `By name. ${IN_FORCE}`),
      tag: 'accesses', access: 'teamApiKey', headers: paging,
      responses: { 200: { description: 'One page of accesses.', schema: z.object({ data: z.array(teamAccessWithCountSchema), count }).meta({ id: 'TeamAccessList' }) } },
      errors: { 400: 'Invalid paging header.' },
    },
    [`POST ${base}/accesses`]: {
      operationId: 'createTeamAccess', summary: 'Create an access', description: needs('team.accesses.manage', 'Logged as DOCUMENTATION_RIGHT_CREATED.'),
      tag: 'accesses', access: 'teamApiKey', body: createAccessSchema.meta({ id: 'TeamAccessCreateRequest' }), bodyRequired: true,
      responses: { 201: { description: 'The access.', schema: teamAccessSchema } },
      errors: JSON_BODY_ERRORS,
    },
    [`GET ${base}/accesses/:accessId`]: {
      operationId: 'getTeamAccess', summary: 'An access with its assignments', description: needs('team.accesses.view', IN_FORCE),
      tag: 'accesses', access: 'teamApiKey',
      responses: { 200: { description: 'The access.', schema: teamAccessDetailSchema } },
      errors: { 404: 'No such access in the team.' },
    },
    [`PATCH ${base}/accesses/:accessId`]: {
      operationId: 'updateTeamAccess', summary: 'Change an access', description: needs('team.accesses.manage', 'Logged as DOCUMENTATION_RIGHT_UPDATED with the changed fields.'),
      tag: 'accesses', access: 'teamApiKey', body: updateAccessSchema.meta({ id: 'TeamAccessUpdateRequest' }), bodyRequired: true,
      responses: { 200: { description: 'The access as it is now.', schema: teamAccessSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such access in the team.' },
    },
    [`DELETE ${base}/accesses/:accessId`]: {
      operationId: 'deleteTeamAccess', summary: 'Delete an access and its assignments', description: needs('team.accesses.manage', 'Logged as DOCUMENTATION_RIGHT_DELETED.'),
      tag: 'accesses', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such access in the team.' },
    },
    [`POST ${base}/accesses/:accessId/assignments`]: {
      operationId: 'assignTeamAccess', summary: 'Give an access to a member',
      description: needs('team.accesses.manage', 'Logged as DOCUMENTATION_RIGHT_ASSIGNED. An expired assignment of the member is replaced.'),
      tag: 'accesses', access: 'teamApiKey', body: assignMemberSchema.meta({ id: 'TeamAccessAssignRequest' }), bodyRequired: true,
      responses: { 201: { description: 'The assignment.', schema: accessAssignmentSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such access, or no current member of that id, in the team.', 409: 'The member has the access already.' },
    },
    [`DELETE ${base}/accesses/:accessId/assignments/:assignmentId`]: {
      operationId: 'unassignTeamAccess', summary: 'Take an access back from a member', description: needs('team.accesses.manage', 'Logged as DOCUMENTATION_RIGHT_UNASSIGNED.'),
      tag: 'accesses', access: 'teamApiKey',
      responses: { 204: { description: 'Taken back.' } },
      errors: { 404: 'No such access, or no assignment of it in force with that id.' },
    },
    [`POST ${base}/accesses/:accessId/group-assignments`]: {
      operationId: 'assignTeamAccessToGroup', summary: 'Give an access to a group',
      description: needs('team.accesses.manage', 'Logged as DOCUMENTATION_RIGHT_GROUP_ASSIGNED. An expired assignment of the group is replaced.'),
      tag: 'accesses', access: 'teamApiKey', body: assignGroupSchema.meta({ id: 'TeamAccessGroupAssignRequest' }), bodyRequired: true,
      responses: { 201: { description: 'The assignment.', schema: accessGroupAssignmentSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such access or group in the team.', 409: 'The group has the access already.' },
    },
    [`DELETE ${base}/accesses/:accessId/group-assignments/:assignmentId`]: {
      operationId: 'unassignTeamAccessFromGroup', summary: 'Take an access back from a group',
      description: needs('team.accesses.manage', 'Logged as DOCUMENTATION_RIGHT_GROUP_UNASSIGNED.'),
      tag: 'accesses', access: 'teamApiKey',
      responses: { 204: { description: 'Taken back.' } },
      errors: { 404: 'No such access, or no group assignment of it in force with that id.' },
    },
    [`GET ${base}/members/:memberId/accesses`]: {
      operationId: 'listMemberAccesses', summary: 'A member\'s effective accesses',
      description: needs(null, `Needs \`team.accesses.view\`, except for the caller's own member. ${IN_FORCE} A member who left has none.`),
      tag: 'accesses', access: 'teamApiKey',
      responses: { 200: { description: 'The member access assignments (source direct or group, with the access).', schema: memberAccessListSchema } },
      errors: { 404: 'No member of that id in the team.' },
    },
  };
}
