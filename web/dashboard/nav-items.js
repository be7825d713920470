import { MediaView } from './media-view.js';
import { UploadView } from './upload-view.js';
import { UsageView } from './usage-view.js';

// The shell's views, in the order of the navigation. A view appears only for a member whose
// permissions allow it (the API refuses the rest anyway). The team views of the next step join
// here: one entry each, with the permission they need.
export const NAV_ITEMS = [
  { path: '/app/media', label: 'Media', permission: 'team.media.view', view: MediaView },
  { path: '/app/upload', label: 'Upload', permission: 'team.media.upload', view: UploadView },
  { path: '/app/usage', label: 'Usage', permission: 'team.media.view', view: UsageView },
];

export function viewFor(path) {
  return NAV_ITEMS.find((item) => path === item.path || path.startsWith(`${item.path}/`)) ?? null;
}
