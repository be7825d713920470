import { MediaView } from './media-view.js';
import { UploadView } from './upload-view.js';
import { UsageView } from './usage-view.js';

// The shell's views, in the order of the navigation. A view appears only for a member whose
// permissions allow it (the API refuses the rest anyway): one entry each, with the permission it needs.
// The media views are part of the first load (`view`); the team screens load when first opened (`load`).
export const NAV_ITEMS = [
  { path: '/app/media', label: 'Media', permission: 'team.media.view', view: MediaView },
  { path: '/app/upload', label: 'Upload', permission: 'team.media.upload', view: UploadView },
  { path: '/app/usage', label: 'Usage', permission: 'team.media.view', view: UsageView },
  { path: '/app/members', label: 'Members', permission: 'team.members.view', load: () => import('./members-view.js').then((module) => module.MembersView) },
  { path: '/app/invites', label: 'Invites', permission: 'team.invites.manage', load: () => import('./invites-view.js').then((module) => module.InvitesView) },
  { path: '/app/api-keys', label: 'API keys', permission: 'team.apiKeys.manage', load: () => import('./api-keys-view.js').then((module) => module.ApiKeysView) },
  { path: '/app/automations', label: 'Automations', permission: 'team.automations.manage', load: () => import('./automations-view.js').then((module) => module.AutomationsView) },
  { path: '/app/upload-urls', label: 'Upload URLs', permission: 'team.media.upload', load: () => import('./upload-urls-view.js').then((module) => module.UploadUrlsView) },
  { path: '/app/team-log', label: 'Team log', permission: 'team.logs.view', load: () => import('./team-log-view.js').then((module) => module.TeamLogView) },
];

export function viewFor(path) {
  return NAV_ITEMS.find((item) => path === item.path || path.startsWith(`${item.path}/`)) ?? null;
}
