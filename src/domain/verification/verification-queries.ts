import type { EntityManager } from '@mikro-orm/postgresql';
import { conflict, forbidden, notFound, unauthorized } from '../../errors/errors.ts';
import { isUuid } from '../validation.ts';

/** The reads the verification flows share: the user, a free address, an owned team, the deletion rule. */

export interface UserRow {
  id: string;
  username: string;
  email: string;
  is_email_verified: boolean;
}

export interface OwnedTeam {
  teamId: string;
  teamName: string;
  memberId: string;
}

export async function userRow(em: EntityManager, userId: string): Promise<UserRow> {
  const rows = await em.execute<UserRow[]>('select id, username, email, is_email_verified from "user" where id = ?', [userId]);
  if (!rows[0]) throw notFound('user', userId);
  return rows[0];
}

export async function assertEmailFree(em: EntityManager, email: string, userId: string): Promise<void> {
  const taken = await em.execute('select 1 from "user" where lower(email) = lower(?) and id <> ?', [email, userId]);
  if (taken.length > 0) throw conflict('The new email address is taken', 'newEmail');
}

/** The team the user owns (a current owner member); 401 for a non-member (as on the team routes), 403 for a member who is not the owner. */
export async function ownedTeam(em: EntityManager, userId: string, teamId: string, refusal?: () => Error): Promise<OwnedTeam> {
  const rows = isUuid(teamId)
    ? await em.execute<{ id: string; is_team_owner: boolean; name: string }[]>(
        `select m.id, m.is_team_owner, t.name from team_member m join team t on t.id = m.team_id
          where m.team_id = ? and m.user_id = ? and m.left_team_at is null and not m.archived`,
        [teamId, userId],
      )
    : [];
  const member = rows[0];
  if (!member) throw refusal ? refusal() : unauthorized();
  if (!member.is_team_owner) throw refusal ? refusal() : forbidden('Only the team\'s owner can do this');
  return { teamId, teamName: member.name, memberId: member.id };
}

/**
 * The rule: an owner must first transfer or delete each team it owns (a team is never left
 * without an owner), and a payer's running subscriptions must end or change payer first.
 */
export async function checkAccountDeletable(em: EntityManager, userId: string): Promise<void> {
  const owned = await em.execute<{ name: string }[]>(
    `select t.name from team_member m join team t on t.id = m.team_id
      where m.user_id = ? and m.is_team_owner and m.left_team_at is null order by t.name limit 1`,
    [userId],
  );
  if (owned.length > 0) throw conflict(`The user owns the team ${owned[0]!.name}: transfer its ownership or delete it first`, owned[0]!.name);
  // Deleting the user would delete the subscriptions it pays (user_id cascades), and so change a team's plan behind its back.
  const paying = await em.execute<{ name: string }[]>(
    `select t.name from subscription s join team t on t.id = s.team_id where s.user_id = ? and s.ended_at is null order by t.name limit 1`,
    [userId],
  );
  if (paying.length > 0) throw conflict(`The user pays the subscription of the team ${paying[0]!.name}: it must end, or be moved to another payer, first`, paying[0]!.name);
}
