// Every permission of a team (src/auth/permissions.ts; the team browser test holds the two lists
// equal), in the order the pickers show them. The owner holds all of them.

export const PERMISSION_NAMES = [
  'team.media.view', 'team.media.upload', 'team.media.edit', 'team.media.delete', 'team.automations.manage',
  'team.members.view', 'team.members.manage', 'team.groups.manage', 'team.invites.manage', 'team.apiKeys.manage',
  'team.logs.view', 'team.settings.manage', 'team.modules.manage',
  'team.files.upload', 'team.files.manage', 'team.todos.view', 'team.todos.manage',
  'team.meetings.view', 'team.meetings.manage', 'team.logoffs.manage',
  'team.penalties.view', 'team.penalties.manage', 'team.worryBox.manage', 'team.tags.manage',
  'team.accesses.view', 'team.accesses.manage', 'team.news.manage', 'team.links.manage', 'team.portal.manage',
];

/** The permissions of a member info (TeamMemberInfo): its own and its groups'; every one for the owner. */
export function effectivePermissions(member) {
  if (member.isTeamOwner) return [...PERMISSION_NAMES];
  const names = new Set(member.permissions ?? []);
  for (const group of member.groups ?? []) for (const name of group.permissions ?? []) names.add(name);
  return [...names].sort();
}
