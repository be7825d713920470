import { z } from 'zod';
import { createLogoffSchema, logoffFilterSchema } from '../../domain/logoffs/logoff.service.ts';
import { MEETING_STATES, MEETING_TRANSITIONS, type MeetingTransition } from '../../domain/meetings/meeting-states.ts';
import { createMeetingSchema, meetingFilterSchema, updateMeetingSchema } from '../../domain/meetings/meeting.service.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';
import type { OperationDoc } from './operation-doc.ts';
import { groupSchema } from './schemas.ts';
import { memberShortSchema } from './team-schemas.ts';

/** Meetings and logoffs (src/http/routes/teams/meeting-routes.ts; docs/workspace.md "Meetings and logoffs"). */

const base = '/v1/teams/:teamId';
const id = z.uuid();
const timestamp = z.iso.datetime();
const count = z.number().int().min(0);
const needs = (permission: string | null, more = '') =>
  `${permission ? `Needs \`${permission}\`.` : 'Any full key of the team.'} A key with scope media:upload gets 403.${more ? ` ${more}` : ''}`;

const ARCHIVE = 'A FINISHED, LOCKED or CANCELLED meeting closed more than meetingArchive months ago (a plan limit) is not found.';

export const meetingSchema = z
  .object({
    id, teamId: id, title: z.string(), dateTime: timestamp,
    participants: z.string().meta({ description: 'Spec 2.15\'s text field: the JSON `{"teamMemberIds": [...], "groupIds": [...]}`.' }),
    agenda: z.string().nullable(), meetingPoint: z.string().nullable(), protocol: z.string().nullable(),
    state: z.enum(MEETING_STATES),
    startedAt: timestamp.nullable(), endedAt: timestamp.nullable(), cancelledAt: timestamp.nullable(),
    creatorTeamMemberId: id.nullable(), createdAt: timestamp, updatedAt: timestamp,
  })
  .meta({ id: 'Meeting' });
export const meetingInfoSchema = meetingSchema
  .extend({ teamMembers: z.array(memberShortSchema), groups: z.array(groupSchema) })
  .meta({ id: 'MeetingInfo', description: 'The meeting with its participating members and groups.' });

export const logoffSchema = z
  .object({
    id, teamId: id, teamMemberId: id, message: z.string(), meetingId: id.nullable(), begin: timestamp.nullable(), end: timestamp.nullable(),
    createdAt: timestamp, teamMember: memberShortSchema,
  })
  .meta({ id: 'Logoff' });

const LOGOFF_VISIBILITY = 'With `team.logoffs.manage` every member\'s logoffs; otherwise the key\'s member\'s own.';

const transitionDoc = (transition: MeetingTransition, operationId: string, summary: string): OperationDoc => {
  const { from, to } = MEETING_TRANSITIONS[transition];
  return {
    operationId, summary, tag: 'meetings', access: 'teamApiKey',
    description: needs('team.meetings.manage', `${from} → ${to}, decided once when calls race (on any instance).`),
    responses: { 200: { description: `The meeting, ${to}.`, schema: meetingInfoSchema } },
    errors: { 404: 'No such meeting (or one beyond meetingArchive).', 409: `The meeting is not ${from} (\`value\` is its state).` },
  };
};

export function meetingOperations(paging: z.ZodObject): Record<string, OperationDoc> {
  return {
    [`GET ${base}/meetings`]: {
      operationId: 'listMeetings', summary: 'List meetings', description: needs('team.meetings.view', `Newest dateTime first. ${ARCHIVE}`),
      tag: 'meetings', access: 'teamApiKey', query: meetingFilterSchema, headers: paging,
      responses: { 200: { description: 'One page of meetings.', schema: z.object({ data: z.array(meetingSchema), count }).meta({ id: 'MeetingList' }) } },
      errors: { 400: 'Invalid filter or paging.' },
    },
    [`POST ${base}/meetings`]: {
      operationId: 'createMeeting', summary: 'Plan a meeting', description: needs('team.meetings.manage', 'The meeting starts PLANNED.'),
      tag: 'meetings', access: 'teamApiKey', body: createMeetingSchema.meta({ id: 'MeetingCreateRequest' }), bodyRequired: true,
      responses: { 201: { description: 'The meeting.', schema: meetingInfoSchema } },
      errors: {
        ...JSON_BODY_ERRORS, 402: 'The team has maxPlannedMeetings PLANNED meetings (error.teamLimits.maxPlannedMeetings).',
        404: 'A participant is no current member, or no group, of the team.',
      },
    },
    [`GET ${base}/meetings/:meetingId`]: {
      operationId: 'getMeeting', summary: 'A meeting with its participants', description: needs('team.meetings.view', ARCHIVE), tag: 'meetings', access: 'teamApiKey',
      responses: { 200: { description: 'The meeting.', schema: meetingInfoSchema } },
      errors: { 404: 'No such meeting (or one beyond meetingArchive).' },
    },
    [`PATCH ${base}/meetings/:meetingId`]: {
      operationId: 'updateMeeting', summary: 'Change a meeting as its state allows',
      description: needs('team.meetings.manage', 'PLANNED: anything; RUNNING: all but dateTime; FINISHED: only the protocol; LOCKED, CANCELLED: nothing (409).'),
      tag: 'meetings', access: 'teamApiKey', body: updateMeetingSchema.meta({ id: 'MeetingUpdateRequest' }), bodyRequired: true,
      responses: { 200: { description: 'The meeting as it is now.', schema: meetingInfoSchema } },
      errors: { ...JSON_BODY_ERRORS, 404: 'No such meeting, or a participant is not of the team.', 409: 'The meeting\'s state does not allow changing a given field.' },
    },
    [`DELETE ${base}/meetings/:meetingId`]: {
      operationId: 'deleteMeeting', summary: 'Delete a meeting', description: needs('team.meetings.manage', 'In any state; its logoffs stay, without the meeting.'),
      tag: 'meetings', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such meeting (or one beyond meetingArchive).' },
    },
    [`POST ${base}/meetings/:meetingId/start`]: transitionDoc('start', 'startMeeting', 'Start a meeting (sets startedAt)'),
    [`POST ${base}/meetings/:meetingId/end`]: transitionDoc('end', 'endMeeting', 'End a meeting (sets endedAt)'),
    [`POST ${base}/meetings/:meetingId/lock`]: transitionDoc('lock', 'lockMeeting', 'Lock a finished meeting: its protocol is frozen'),
    [`POST ${base}/meetings/:meetingId/cancel`]: transitionDoc('cancel', 'cancelMeeting', 'Cancel a planned meeting (sets cancelledAt)'),

    [`GET ${base}/logoffs`]: {
      operationId: 'listLogoffs', summary: 'List logoffs', description: needs(null, `${LOGOFF_VISIBILITY} Newest first.`),
      tag: 'logoffs', access: 'teamApiKey', query: logoffFilterSchema, headers: paging,
      responses: { 200: { description: 'One page of logoffs.', schema: z.object({ data: z.array(logoffSchema), count }).meta({ id: 'LogoffList' }) } },
      errors: { 400: 'Invalid filter or paging.' },
    },
    [`POST ${base}/logoffs`]: {
      operationId: 'createLogoff', summary: 'Announce one\'s own absence',
      description: needs(null, 'For the key\'s member (the owner for a key linked to no member). A range (begin and end, begin <= end, end not in the past), a meetingId, or both. Logged as LOGOFF_CREATED.'),
      tag: 'logoffs', access: 'teamApiKey', body: createLogoffSchema.meta({ id: 'LogoffCreateRequest' }), bodyRequired: true,
      responses: { 201: { description: 'The logoff.', schema: logoffSchema } },
      errors: {
        ...JSON_BODY_ERRORS, 404: 'No such meeting.',
        409: 'The range overlaps another logoff of the member, the member already logged off from the meeting, or the meeting is closed.',
      },
    },
    [`GET ${base}/logoffs/:logoffId`]: {
      operationId: 'getLogoff', summary: 'A logoff', description: needs(null, LOGOFF_VISIBILITY), tag: 'logoffs', access: 'teamApiKey',
      responses: { 200: { description: 'The logoff.', schema: logoffSchema } },
      errors: { 404: 'No such logoff, or another member\'s without `team.logoffs.manage`.' },
    },
    [`DELETE ${base}/logoffs/:logoffId`]: {
      operationId: 'deleteLogoff', summary: 'Delete a logoff', description: needs(null, `${LOGOFF_VISIBILITY} Logged as LOGOFF_DELETED.`), tag: 'logoffs', access: 'teamApiKey',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'No such logoff, or another member\'s without `team.logoffs.manage`.' },
    },
  };
}
