import type { EntityManager } from '@mikro-orm/postgresql';
import { TeamLog } from './team-log.entity.ts';

/** LogAction values of spec 2.19 that this service writes so far. */
export const LogAction = {
  apiKeyCreated: 'API_KEY_CREATED',
  apiKeyDeleted: 'API_KEY_DELETED',
  memberJoined: 'MEMBER_JOINED',
  memberLeft: 'MEMBER_LEFT',
  memberKicked: 'MEMBER_KICKED',
  memberUpdated: 'MEMBER_UPDATED',
  memberNoteCreated: 'MEMBER_NOTE_CREATED',
  memberNoteDeleted: 'MEMBER_NOTE_DELETED',
  memberPermissionsUpdated: 'MEMBER_PERMISSIONS_UPDATED',
  groupCreated: 'GROUP_CREATED',
  inviteCreated: 'INVITE_CREATED',
  inviteDeleted: 'INVITE_DELETED',
  invitesClear: 'INVITES_CLEAR',
  groupUpdated: 'GROUP_UPDATED',
  groupDeleted: 'GROUP_DELETED',
  groupsUpdated: 'GROUPS_UPDATED',
  memberGroupRemoved: 'MEMBER_GROUP_REMOVED',
  memberGroupsChanged: 'MEMBER_GROUPS_CHANGED',
  memberGroupAdded: 'MEMBER_GROUP_ADDED',
  teamUpdated: 'TEAM_UPDATED',
  moduleActivated: 'MODULE_ACTIVATED',
  moduleDeactivated: 'MODULE_DEACTIVATED',
  teamFileUploaded: 'TEAM_FILE_UPLOADED',
  teamFileDeleted: 'TEAM_FILE_DELETED',
  todoFileUploaded: 'TODO_FILE_UPLOADED',
  todoFileDeleted: 'TODO_FILE_DELETED',
  logoffCreated: 'LOGOFF_CREATED',
  logoffDeleted: 'LOGOFF_DELETED',
  // Not in spec 2.19's list: automations are this service's addition.
  automationCreated: 'AUTOMATION_CREATED',
  automationUpdated: 'AUTOMATION_UPDATED',
  automationDeleted: 'AUTOMATION_DELETED',
} as const;

export type LogActionName = (typeof LogAction)[keyof typeof LogAction];

export interface LogEntry {
  teamId: string;
  action: LogActionName;
  /** Who acted; omitted for the operator. */
  teamMemberId?: string | null;
  targetTeamMemberId?: string | null;
  targetIdentifier?: string | null;
  data?: Record<string, unknown> | null;
}

/** Adds a team log entry to the unit of work of `em`, so it commits with the change it records. */
export function recordTeamLog(em: EntityManager, entry: LogEntry): TeamLog {
  return em.create(TeamLog, {
    team: entry.teamId,
    action: entry.action,
    teamMember: entry.teamMemberId ?? null,
    targetTeamMember: entry.targetTeamMemberId ?? null,
    targetIdentifier: entry.targetIdentifier ?? null,
    data: entry.data ?? null,
  });
}
