/** Media permissions of the operator contract, as the spec assigns them to routes; then the service's own. */
export const Permission = {
  mediaView: 'team.media.view',
  mediaUpload: 'team.media.upload',
  mediaEdit: 'team.media.edit',
  mediaDelete: 'team.media.delete',
  /** Automations (webhook targets) and their deliveries: list, create, change, delete, retry. */
  automationsManage: 'team.automations.manage',
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
