import type { EntityManager } from '@mikro-orm/postgresql';
import { accountExportLinkRefused } from '../../errors/errors.ts';
import type { SignedLinks } from '../media/signed-links.ts';

/** The HKDF label of export links: a signature made for a media file or an upload URL never opens an export. */
export const ACCOUNT_EXPORT_KEY_LABEL = 'account-exports/v1';
/** Export links are valid for one hour (issue 16). */
export const ACCOUNT_EXPORT_TTL_SECONDS = 3600;

/** `v1/account-exports/<userId>/<exportId>`: the signed path, without a leading slash. */
export function exportPath(userId: string, exportId: string): string {
  return `v1/account-exports/${userId}/${exportId}`;
}

/** A link to the user's archive, signed for one hour. */
export function exportLink(signer: SignedLinks, publicUrl: string, userId: string, exportId: string): { url: string; expiresAt: Date } {
  const query = signer.sign(exportPath(userId, exportId));
  const expires = Number(new URLSearchParams(query.slice(1)).get('expires'));
  return { url: `${publicUrl}/${exportPath(userId, exportId)}${query}`, expiresAt: new Date(expires * 1000) };
}

/** Checks an export link's signature; throws 403 for an altered link, 410 past its hour. */
export function checkExportLink(signer: SignedLinks, userId: string, exportId: string, query: URLSearchParams): void {
  const check = signer.verify(exportPath(userId, exportId), query.get('expires'), query.get('signature'));
  if (!check.valid) throw accountExportLinkRefused(check.reason === 'expired' ? 'expired' : 'invalid');
}

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

/**
 * The user's data as one JSON document, built when the link is opened (so it is current and never
 * stored): the user record, the linked accounts as minimal account info (spec 2.6), team
 * memberships, and sessions without their tokens. No secret is in it: no password hash, no
 * provider tokens, no token hashes.
 */
export async function buildAccountExport(em: EntityManager, userId: string): Promise<Record<string, unknown> | null> {
  const users = await em.execute<Record<string, any>[]>(
    `select id, username, changed_username_at, email, email_verified, is_email_verified, image, coins, created_at, updated_at, last_login_at,
            disabled, disabled_at, welcome_screen, permissions from "user" where id = ?`,
    [userId],
  );
  const user = users[0];
  if (!user) return null;
  const accounts = await em.execute<Record<string, any>[]>(
    'select account_id, provider_id, data, created_at from account where user_id = ? order by created_at, id',
    [userId],
  );
  const memberships = await em.execute<Record<string, any>[]>(
    `select m.id, m.team_id, t.name as team_name, m.name, m.is_team_owner, m.joined_team_at, m.left_team_at
       from team_member m join team t on t.id = m.team_id where m.user_id = ? order by m.joined_team_at, m.id`,
    [userId],
  );
  const sessions = await em.execute<Record<string, any>[]>(
    'select id, method, created_at, last_used_at, expires_at, ip, user_agent from user_session where user_id = ? order by created_at, id',
    [userId],
  );
  return {
    exportedAt: new Date().toISOString(),
    user: {
      id: user.id, username: user.username, changedUsernameAt: iso(user.changed_username_at), email: user.email,
      emailVerified: iso(user.email_verified), isEmailVerified: user.is_email_verified, image: user.image, coins: user.coins,
      createdAt: iso(user.created_at), updatedAt: iso(user.updated_at), lastLoginAt: iso(user.last_login_at),
      disabled: user.disabled, disabledAt: iso(user.disabled_at), welcomeScreen: user.welcome_screen, permissions: user.permissions,
    },
    accounts: accounts.map((row) => ({ accountId: row.account_id, providerId: row.provider_id, data: row.data, createdAt: iso(row.created_at) })),
    memberships: memberships.map((row) => ({
      memberId: row.id, teamId: row.team_id, teamName: row.team_name, name: row.name, isTeamOwner: row.is_team_owner,
      joinedTeamAt: iso(row.joined_team_at), leftTeamAt: iso(row.left_team_at),
    })),
    sessions: sessions.map((row) => ({
      id: row.id, method: row.method, createdAt: iso(row.created_at), lastUsedAt: iso(row.last_used_at), expiresAt: iso(row.expires_at),
      ip: row.ip, userAgent: row.user_agent,
    })),
  };
}
