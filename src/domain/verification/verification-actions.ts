import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { AuthCache } from '../../auth/auth-changes.ts';
import type { MailSender } from '../../mail/mail-sender.ts';
import type { SignedLinks } from '../media/signed-links.ts';
import type { TeamDeletion } from '../teams/team-deletion.ts';
import { announceAuthChange, announceUserAuthChange } from '../../auth/auth-changes.ts';
import { conflict } from '../../errors/errors.ts';
import { LogAction, recordTeamLog } from '../team-logs/team-log.service.ts';
import { exportLink } from '../users/account-export.ts';
import { assertEmailFree, checkAccountDeletable, ownedTeam, userRow } from './verification-queries.ts';
import { EMAIL_VERIFY, type ActionType, type TokenRow } from './verification-token.ts';

/** What the actions work with; VerificationService hands them its own dependencies. */
export interface VerificationActionDeps {
  orm: MikroORM;
  mail: MailSender;
  /** Base address of the service, for the instructions in the mails and the export links. */
  publicUrl: string;
  teamDeletion: TeamDeletion;
  /** Signs account export links; null where nothing confirms an export (the CLI). */
  exportLinks: SignedLinks | null;
  /** Forgets a team's keys and sessions, or a user's sessions, on this instance at once (others hear the NOTIFY). */
  authCache: AuthCache & { invalidateUser(userId: string): void };
}

/** What an action does once all its tokens are confirmed, and what must still hold at each confirm. */
export interface ActionRun {
  /** Throws (4xx) when the action can no longer run; checked at every confirm, so a stale token fails early. */
  check(em: EntityManager, data: Record<string, unknown> | null, tokens: TokenRow[]): Promise<void>;
  /** Inside the confirm's transaction; answers what to do after the commit, if anything. */
  run(em: EntityManager, data: Record<string, unknown> | null, tokens: TokenRow[]): Promise<(() => Promise<void>) | void>;
}

/** The five actions of spec 2.7 this service runs (docs/accounts.md, "The actions"). */
export class VerificationActions {
  readonly runs: Record<ActionType, ActionRun>;
  private readonly deps: VerificationActionDeps;

  constructor(deps: VerificationActionDeps) {
    this.deps = deps;
    this.runs = {
      ACCOUNT_EMAIL_CHANGE: { check: async () => undefined, run: (em, data, tokens) => this.changeEmail(em, data, tokens) },
      TEAM_OWNERSHIP_TRANSFER: { check: (em, data) => this.checkTransfer(em, data).then(() => undefined), run: (em, data, tokens) => this.transferOwnership(em, data, tokens) },
      TEAM_DELETE: { check: (em, data, tokens) => this.checkTeamDelete(em, data, tokens), run: (em, data) => this.deleteTeam(em, data) },
      ACCOUNT_DELETE: { check: (em, _data, tokens) => checkAccountDeletable(em, tokens[0]!.userId), run: (em, _data, tokens) => this.deleteAccount(em, tokens[0]!.userId) },
      ACCOUNT_EXPORT: { check: async () => undefined, run: async (_em, _data, tokens) => () => this.sendExport(tokens[0]!.userId, tokens[0]!.actionId) },
    };
  }

  private async changeEmail(em: EntityManager, data: Record<string, unknown> | null, tokens: TokenRow[]): Promise<void> {
    const newEmail = String(data?.newEmail ?? '');
    const userId = tokens[0]!.userId;
    await assertEmailFree(em, newEmail, userId);
    try {
      // Both addresses proved themselves: the new one is verified. Sessions stay (nothing about the sign-in changed).
      await em.execute(`update "user" set email = ?, is_email_verified = true, email_verified = now(), updated_at = now() where id = ?`, [newEmail, userId]);
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw conflict('The new email address is taken', 'newEmail');
      throw error;
    }
    // Verification mails sent to the old address must not verify the new one.
    await em.execute(`delete from verification_action_token where type = ? and user_id = ?`, [EMAIL_VERIFY, userId]);
  }

  private async checkTransfer(em: EntityManager, data: Record<string, unknown> | null): Promise<{ ownerMemberId: string; newMemberId: string }> {
    const teamId = String(data?.teamId ?? '');
    const members = await em.execute<{ id: string; user_id: string; is_team_owner: boolean }[]>(
      `select id, user_id, is_team_owner from team_member
        where team_id = ? and user_id in (?, ?) and left_team_at is null and not archived for update`,
      [teamId, String(data?.currentOwnerId ?? ''), String(data?.newOwnerId ?? '')],
    );
    const owner = members.find((member) => member.user_id === data?.currentOwnerId && member.is_team_owner);
    const next = members.find((member) => member.user_id === data?.newOwnerId);
    if (!owner || !next) throw conflict('The team\'s owner or the new owner is no longer a member of the team (or no longer the owner): start the transfer again');
    return { ownerMemberId: owner.id, newMemberId: next.id };
  }

  private async transferOwnership(em: EntityManager, data: Record<string, unknown> | null, tokens: TokenRow[]): Promise<() => Promise<void>> {
    const teamId = String(data?.teamId);
    const { ownerMemberId, newMemberId } = await this.checkTransfer(em, data);
    // Both flags in one statement: there is never a moment with two owners or none.
    await em.execute('update team_member set is_team_owner = (id = ?) where id in (?, ?)', [newMemberId, ownerMemberId, newMemberId]);
    const reason = { reason: 'TEAM_OWNERSHIP_TRANSFER', actionId: tokens[0]!.actionId };
    recordTeamLog(em, { teamId, action: LogAction.memberUpdated, teamMemberId: ownerMemberId, targetTeamMemberId: ownerMemberId, data: { isTeamOwner: false, ...reason } });
    recordTeamLog(em, { teamId, action: LogAction.memberUpdated, teamMemberId: ownerMemberId, targetTeamMemberId: newMemberId, data: { isTeamOwner: true, ...reason } });
    await em.flush();
    // Keys linked to no member act as the owner: they now act as the new one.
    await announceAuthChange(em, teamId);
    return async () => this.deps.authCache.invalidateTeam(teamId);
  }

  private async checkTeamDelete(em: EntityManager, data: Record<string, unknown> | null, tokens: TokenRow[]): Promise<void> {
    await ownedTeam(em, tokens[0]!.userId, String(data?.teamId ?? ''), () => conflict('The team is gone, or the user no longer owns it'));
  }

  private async deleteTeam(em: EntityManager, data: Record<string, unknown> | null): Promise<() => Promise<void>> {
    const teamId = String(data?.teamId);
    await announceAuthChange(em, teamId);
    const deleted = await this.deps.teamDeletion.deleteRows(em, teamId);
    // Other tokens naming the team (a pending transfer) can no longer run.
    await em.execute(`delete from verification_action_token where data->>'teamId' = ? and not locked and type <> 'TEAM_DELETE'`, [teamId]);
    return async () => {
      this.deps.authCache.invalidateTeam(teamId);
      await this.deps.teamDeletion.afterCommit(deleted);
    };
  }

  private async deleteAccount(em: EntityManager, userId: string): Promise<() => Promise<void>> {
    await checkAccountDeletable(em, userId);
    const teams = await em.execute<{ team_id: string }[]>('select distinct team_id from team_member where user_id = ?', [userId]);
    for (const { team_id } of teams) await announceAuthChange(em, team_id);
    await announceUserAuthChange(em, userId);
    // Accounts, sessions, sign-in codes, memberships (and the keys linked to them), tokens: all cascade from the user.
    await em.execute('delete from "user" where id = ?', [userId]);
    return async () => {
      this.deps.authCache.invalidateUser(userId);
      for (const { team_id } of teams) this.deps.authCache.invalidateTeam(team_id);
    };
  }

  private async sendExport(userId: string, actionId: string): Promise<void> {
    if (!this.deps.exportLinks) throw new Error('account exports need the operator secret to sign their links');
    const user = await userRow(this.deps.orm.em.fork(), userId);
    const link = exportLink(this.deps.exportLinks, this.deps.publicUrl, userId, actionId);
    await this.deps.mail.send({
      kind: 'verification.ACCOUNT_EXPORT.link',
      to: user.email,
      notification: { userId, topic: 'SYSTEM' },
      subject: 'Your account data export',
      text: [
        `Hello ${user.username},`,
        '',
        'your data export is ready. Download it (a JSON file) from this link:',
        '',
        link.url,
        '',
        `The link works until ${link.expiresAt.toISOString()} (one hour).`,
      ].join('\n'),
    });
  }
}
