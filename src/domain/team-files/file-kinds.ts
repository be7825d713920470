import { LogAction, type LogActionName } from '../team-logs/team-log.service.ts';

/**
 * The two kinds of files a team keeps beside its media (spec 2.4). They share
 * the upload core, the storage counter and every rule; they differ in their
 * table, their storage key prefix, what they are attached to and their log
 * actions.
 */
export interface FileKind {
  /** In messages: "team file not found". */
  label: string;
  table: 'team_file' | 'todo_file';
  /** Storage keys are `<prefix>/<teamId>/<fileId>`, never derived from a user's name. */
  keyPrefix: string;
  /** The column naming what the file is for: a member (nullable) or a to-do. */
  attachColumn: 'target_team_member_id' | 'todo_id';
  /** That column's name in the answers. */
  attachField: 'targetTeamMemberId' | 'todoId';
  /** The path segment of the signed preview route: `/v1/teams/<teamId>/<segment>/<fileId>/content`. */
  contentSegment: 'files' | 'todo-files';
  uploaded: LogActionName;
  deleted: LogActionName;
}

export const TEAM_FILES: FileKind = {
  label: 'team file',
  table: 'team_file',
  keyPrefix: 'team-files',
  attachColumn: 'target_team_member_id',
  attachField: 'targetTeamMemberId',
  contentSegment: 'files',
  uploaded: LogAction.teamFileUploaded,
  deleted: LogAction.teamFileDeleted,
};

export const TODO_FILES: FileKind = {
  label: 'to-do file',
  table: 'todo_file',
  keyPrefix: 'todo-files',
  attachColumn: 'todo_id',
  attachField: 'todoId',
  contentSegment: 'todo-files',
  uploaded: LogAction.todoFileUploaded,
  deleted: LogAction.todoFileDeleted,
};

export function fileStorageKey(kind: FileKind, teamId: string, fileId: string): string {
  return `${kind.keyPrefix}/${teamId}/${fileId}`;
}
