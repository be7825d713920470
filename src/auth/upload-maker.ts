import type { Authenticator } from './authenticator.ts';
import { Permission, Scope } from './permissions.ts';
import type { Principal } from './principal.ts';

/**
 * Who made an upload URL or a tus upload, as stored with it: a key and the prefix of the secret it
 * presented, or a session and its user. What it made works only while that maker may still upload.
 * All four null: made before makers were recorded (a session's tus upload), so nothing to follow.
 */
export interface UploadMaker {
  keyId: string | null;
  keyPrefix: string | null;
  sessionId: string | null;
  userId: string | null;
}

export function makerOf(principal: Principal): UploadMaker {
  return { keyId: principal.keyId, keyPrefix: principal.keyPrefix, sessionId: principal.sessionId, userId: principal.userId };
}

/** What the upload routes ask of a caller (uploadAccess, src/uploads/upload-access.ts): the permission, and the scope when the key is narrowed. */
function mayUpload(principal: Principal, teamId: string): boolean {
  if (principal.teamId !== teamId || !principal.permissions.has(Permission.mediaUpload)) return false;
  return principal.scopes.length === 0 || principal.scopes.includes(Scope.mediaUpload);
}

/**
 * Whether the maker could make the same upload now: its key still has the secret it used (a reroll
 * or a deletion ends that) and its member may still upload; or its session is still signed in and
 * its user is a member who may upload. Answered from the authenticators' caches, which every
 * change to keys, members, groups and sessions clears on every instance (auth-changes.ts), so
 * it costs no query while the maker's entries are cached and follows a change at once.
 */
export async function makerMayUpload(authenticator: Authenticator, teamId: string, maker: UploadMaker): Promise<boolean> {
  if (maker.keyId !== null) {
    if (maker.keyPrefix === null) return false;
    const principal = await authenticator.keys.currentPrincipal(maker.keyPrefix);
    return principal !== null && principal.keyId === maker.keyId && mayUpload(principal, teamId);
  }
  if (maker.sessionId !== null && maker.userId !== null) {
    if (!(await authenticator.sessions.isLive(maker.sessionId))) return false;
    const principal = await authenticator.sessions.principalOn({ sessionId: maker.sessionId, userId: maker.userId }, teamId).catch(() => null);
    return principal !== null && mayUpload(principal, teamId);
  }
  return maker.sessionId === null;
}
