/**
 * Permissions a member holds (directly and through its groups) and the routes
 * check. The media ones are the operator contract's, as the spec assigns them
 * to routes; the rest are the service's own (docs/team-admin.md lists them
 * with their routes). A team's owner holds all of them.
 */
export const Permission = {
  mediaView: 'team.media.view',
  mediaUpload: 'team.media.upload',
  mediaEdit: 'team.media.edit',
  mediaDelete: 'team.media.delete',
  /** Automations (webhook targets) and their deliveries: list, create, change, delete, retry. */
  automationsManage: 'team.automations.manage',
  /** List and read members and groups. */
  membersView: 'team.members.view',
  /** Change, kick members; write and delete member notes. */
  membersManage: 'team.members.manage',
  /** Create, change, reorder and delete groups; put members in and out of them. */
  groupsManage: 'team.groups.manage',
  invitesManage: 'team.invites.manage',
  /** List, create, reroll and delete the team's API keys. */
  apiKeysManage: 'team.apiKeys.manage',
  logsView: 'team.logs.view',
  /** Change, archive and unarchive the team. */
  settingsManage: 'team.settings.manage',
  modulesManage: 'team.modules.manage',
  /** Upload team files (for oneself or another member); see and delete one's own. */
  filesUpload: 'team.files.upload',
  /** See and delete every team file of the team. */
  filesManage: 'team.files.manage',
  /** Read to-do boards, to-dos and their files. */
  todosView: 'team.todos.view',
  /** Create, change and delete to-do boards and to-dos; upload and delete to-do files. */
  todosManage: 'team.todos.manage',
  /** Read meetings with their participants, agenda and protocol. */
  meetingsView: 'team.meetings.view',
  /** Create, change and delete meetings; start, end, lock and cancel them. */
  meetingsManage: 'team.meetings.manage',
  /** See and delete every member's logoffs (anyone files, sees and deletes its own). */
  logoffsManage: 'team.logoffs.manage',
  /** Read every member's penalty points (a member always reads its own). */
  penaltiesView: 'team.penalties.view',
  /** Give penalty points to another member; delete them. */
  penaltiesManage: 'team.penalties.manage',
  /** Read and answer the worry box entries of every group (not only of one's own groups); delete entries. */
  worryBoxManage: 'team.worryBox.manage',
  /** Create, change and delete team tags (attaching one to a to-do is team.todos.manage). */
  tagsManage: 'team.tags.manage',
  /** Read accesses, their assignments and every member's effective accesses (a member always reads its own). */
  accessesView: 'team.accesses.view',
  /** Create, change and delete accesses; assign them to members and groups and take them back. */
  accessesManage: 'team.accesses.manage',
  /** Write, publish and delete news; read drafts and news targeted at any group. */
  newsManage: 'team.news.manage',
  /** Create, change and delete the team's links. */
  linksManage: 'team.links.manage',
  /** Set up and change the team's portal environment and its custom domain. */
  portalManage: 'team.portal.manage',
} as const;

export type PermissionName = (typeof Permission)[keyof typeof Permission];

export const allPermissions: readonly string[] = Object.values(Permission);

/** Scopes an API key can be narrowed to. A key without scopes is a full key. */
export const Scope = {
  mediaUpload: 'media:upload',
} as const;

export type ScopeName = (typeof Scope)[keyof typeof Scope];

export const allScopes: readonly string[] = Object.values(Scope);

const PERMISSION_PATTERN = /^[a-z][a-z0-9]*(\.[a-zA-Z][a-zA-Z0-9]*)+$/;

/** Members may carry permissions of other workspace areas; only the shape is checked. */
export function isPermissionName(value: string): boolean {
  return value.length <= 100 && PERMISSION_PATTERN.test(value);
}
