import { Permission, Scope } from '../auth/permissions.ts';

/** What a key or session needs to upload media (and to make an upload URL): the permission and the key scope. */
export const uploadAccess = { permission: Permission.mediaUpload, scope: Scope.mediaUpload };
