import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { conflict, notFound, tooManyRequests, userDisabled, verificationTokenRefused } from '../../errors/errors.ts';
import type { Logger } from '../../logging/logger.ts';
import { buildAccountExport, checkExportLink } from '../users/account-export.ts';
import { isUuid, parseInput, uuid } from '../validation.ts';
import { verificationTokens, type NewToken } from './verification-tokens.ts';
import { VerificationActions, type ActionRun, type VerificationActionDeps } from './verification-actions.ts';
import { assertEmailFree, checkAccountDeletable, ownedTeam, userRow } from './verification-queries.ts';
import { EMAIL_VERIFY, isTokenShaped, tokenProgressView, type ActionType, type TokenProgress, type TokenRow, type TokenType } from './verification-token.ts';

const HOUR_MS = 3_600_000;
/**
 * How long tokens stay valid: a day for email verification, an email change and an ownership
 * transfer (two people must each find their mail), an hour for deleting a team or an account and
 * for an export (the one who asked confirms at once).
 */
export const TOKEN_TTL_MS: Record<TokenType, number> = {
  EMAIL_VERIFY: 24 * HOUR_MS,
  ACCOUNT_EMAIL_CHANGE: 24 * HOUR_MS,
  TEAM_OWNERSHIP_TRANSFER: 24 * HOUR_MS,
  TEAM_DELETE: HOUR_MS,
  ACCOUNT_DELETE: HOUR_MS,
  ACCOUNT_EXPORT: HOUR_MS,
};
/** One new action (or verification mail) of a type per user per this long; sooner: 429 with Retry-After. */
export const START_INTERVAL_SECONDS = 60;

export const confirmSchema = z.strictObject({ token: z.string().meta({ description: 'The token from the mail (`tvt_...`).' }) });
export const emailChangeSchema = z.strictObject({
  newEmail: z.email({ message: 'must be an email address' }).max(320).meta({ description: 'The address to change to; it must not be taken.' }),
});
export const ownershipTransferSchema = z.strictObject({
  newOwnerId: uuid.meta({ description: 'The user id of a current member of the team (not the owner).' }),
});

export interface ConfirmResult {
  type: TokenType;
  /** Every token of the action is confirmed and the action has run. */
  completed: boolean;
  verificationActionToken: TokenProgress;
}

export interface VerificationDeps extends VerificationActionDeps {
  logger: Pick<Logger, 'error'>;
}

const CONFIRM_PATH = '/v1/auth/verification-tokens/confirm';
const VERIFY_EMAIL_PATH = '/v1/auth/verify-email';

/**
 * Verification action tokens (spec 2.7) and email verification (docs/accounts.md, "Verification
 * and account actions"). A flow starts an action: one token per party, stored as SHA-256 only,
 * grouped by an action id, expiring together, each mailed to its party. Confirming a token marks
 * it used; when every token of the action is used, the action runs in the same transaction, which
 * holds all of the action's rows (`for update`), and locks them: two confirms of one action run one
 * after the other, and the second finds its token used or the action done.
 */
export class VerificationService {
  private readonly deps: VerificationDeps;
  private readonly actions: Record<ActionType, ActionRun>;

  constructor(deps: VerificationDeps) {
    this.deps = deps;
    this.actions = new VerificationActions(deps).runs;
  }

  // ---- progress -------------------------------------------------------------------------------

  /** The user's action tokens as progress (spec 2.7 progress variant), newest first; expired ones are not shown. */
  async progress(userId: string): Promise<TokenProgress[]> {
    const rows = await verificationTokens.progressOf(this.deps.orm.em.fork(), userId, EMAIL_VERIFY);
    return rows.map(tokenProgressView);
  }

  /** Spec 2.5's user with verification progress: `view` (the user record) plus `verificationActionTokens`. */
  async userWithProgress<View extends object>(view: View, userId: string): Promise<View & { verificationActionTokens: TokenProgress[] }> {
    return { ...view, verificationActionTokens: await this.progress(userId) };
  }

  // ---- email verification -------------------------------------------------------------------

  /** Mails a new email verification token (sign-up). Earlier unused ones stop working. */
  async sendEmailVerification(userId: string): Promise<void> {
    const { user, token } = await this.deps.orm.em.fork().transactional(async (em) => {
      const user = await userRow(em, userId);
      await verificationTokens.dropUnfinished(em, EMAIL_VERIFY, userId);
      const { created } = await verificationTokens.createAction(em, [{ type: EMAIL_VERIFY, userId, data: { email: user.email } }], TOKEN_TTL_MS.EMAIL_VERIFY);
      return { user, token: created[0]!.token };
    });
    await this.deps.mail.send({
      kind: 'verification.EMAIL_VERIFY',
      to: user.email,
      notification: { userId, topic: 'SYSTEM' },
      subject: 'Confirm your email address',
      text: [
        `Hello ${user.username},`,
        '',
        'please confirm that this is your email address. Your confirmation token:',
        '',
        token,
        '',
        `To confirm, send it as {"token": "..."} to POST ${this.deps.publicUrl}${VERIFY_EMAIL_PATH}.`,
        `It is valid for ${TOKEN_TTL_MS.EMAIL_VERIFY / HOUR_MS} hours and works once. If you did not sign up, ignore this message.`,
      ].join('\n'),
    });
  }

  /** Re-sends the verification mail: 409 when the address is verified, 429 within START_INTERVAL_SECONDS of the last one. */
  async resendEmailVerification(userId: string): Promise<void> {
    const em = this.deps.orm.em.fork();
    const user = await userRow(em, userId);
    if (user.is_email_verified) throw conflict('The email address is already verified');
    await this.throttle(em, EMAIL_VERIFY, userId);
    await this.sendEmailVerification(userId);
  }

  /** Confirms an email verification token: the user's address (if still the one mailed) is verified. */
  async verifyEmail(input: unknown): Promise<{ isEmailVerified: true; emailVerified: string }> {
    const { token } = parseInput(confirmSchema, input);
    return this.deps.orm.em.fork().transactional(async (em) => {
      const row = await this.usableToken(em, token, (found) => found.type === EMAIL_VERIFY);
      await verificationTokens.markUsed(em, row.id);
      await verificationTokens.lockAll(em, row.actionId);
      // A token mailed to an address the user has since changed proves nothing about the new one.
      const rows = await em.execute<{ email_verified: Date }[]>(
        `update "user" set is_email_verified = true, email_verified = coalesce(email_verified, now()), updated_at = now()
          where id = ? and lower(email) = lower(?) returning email_verified`,
        [row.userId, String(row.data?.email ?? '')],
      );
      if (rows.length === 0) throw verificationTokenRefused('invalid');
      return { isEmailVerified: true as const, emailVerified: new Date(rows[0]!.email_verified).toISOString() };
    });
  }

  // ---- starting actions ---------------------------------------------------------------------

  /** ACCOUNT_EMAIL_CHANGE: one token to the current address (target old), one to the new (target new). */
  async startEmailChange(userId: string, input: unknown): Promise<TokenProgress[]> {
    const { newEmail } = parseInput(emailChangeSchema, input);
    const { user, created } = await this.deps.orm.em.fork().transactional(async (em) => {
      const user = await userRow(em, userId);
      if (user.email.toLowerCase() === newEmail.toLowerCase()) throw conflict('That is already the account\'s email address', 'newEmail');
      await assertEmailFree(em, newEmail, userId);
      await this.throttle(em, 'ACCOUNT_EMAIL_CHANGE', userId);
      await verificationTokens.dropUnfinished(em, 'ACCOUNT_EMAIL_CHANGE', userId);
      const tokens: NewToken[] = (['old', 'new'] as const).map((target) => ({ type: 'ACCOUNT_EMAIL_CHANGE', userId, data: { newEmail, target } }));
      return { user, ...(await verificationTokens.createAction(em, tokens, TOKEN_TTL_MS.ACCOUNT_EMAIL_CHANGE)) };
    });
    const [toOld, toNew] = created;
    const both = `The change happens once both addresses have confirmed: the current one (${user.email}) and the new one (${newEmail}).`;
    await this.mailToken({ userId: user.id, address: user.email }, 'ACCOUNT_EMAIL_CHANGE', 'Confirm the change of your email address', toOld!.token, [
      `Hello ${user.username},`, '', `someone (hopefully you) asked to change your account's email address to ${newEmail}.`, both,
    ]);
    await this.mailToken({ userId: user.id, address: newEmail }, 'ACCOUNT_EMAIL_CHANGE', 'Confirm your new email address', toNew!.token, [
      `Hello ${user.username},`, '', 'someone (hopefully you) asked to make this the email address of their account.', both,
    ]);
    return created.map(({ row }) => tokenProgressView(row));
  }

  /** ACCOUNT_DELETE: refused (409) while the user owns a team; one token to the user. */
  async startAccountDelete(userId: string): Promise<TokenProgress[]> {
    return this.startSingle(userId, 'ACCOUNT_DELETE', null, async (em) => checkAccountDeletable(em, userId), 'Confirm the deletion of your account', [
      'someone (hopefully you) asked to delete your account: your user, linked accounts, sessions and team memberships are removed, for good.',
    ]);
  }

  /** ACCOUNT_EXPORT: one token to the user; on confirm, a link to the archive is mailed. */
  async startAccountExport(userId: string): Promise<TokenProgress[]> {
    return this.startSingle(userId, 'ACCOUNT_EXPORT', null, async () => undefined, 'Confirm the export of your account\'s data', [
      'someone (hopefully you) asked for an export of your account\'s data. Once confirmed, a download link (valid for one hour) is mailed to you.',
    ]);
  }

  /** TEAM_DELETE: the team's owner asks; one token to the owner. */
  async startTeamDelete(userId: string, teamId: string): Promise<TokenProgress[]> {
    const owned = await ownedTeam(this.deps.orm.em.fork(), userId, teamId);
    const data = { teamId: owned.teamId, teamName: owned.teamName };
    return this.startSingle(userId, 'TEAM_DELETE', data, async (em) => void (await ownedTeam(em, userId, teamId)), `Confirm the deletion of the team ${owned.teamName}`, [
      `someone (hopefully you) asked to delete the team ${owned.teamName}: its members, groups, keys, invites, files, media and automations are removed, for good.`,
    ], teamId);
  }

  /** TEAM_OWNERSHIP_TRANSFER: the owner names a current member; both confirm (target old: the owner, new: the new owner). */
  async startOwnershipTransfer(userId: string, teamId: string, input: unknown): Promise<TokenProgress[]> {
    const { newOwnerId } = parseInput(ownershipTransferSchema, input);
    const { owner, newOwner, created, teamName } = await this.deps.orm.em.fork().transactional(async (em) => {
      const owned = await ownedTeam(em, userId, teamId);
      if (newOwnerId === userId) throw conflict('The owner already owns the team', 'newOwnerId');
      const members = await em.execute<{ name: string }[]>(
        'select name from team_member where team_id = ? and user_id = ? and left_team_at is null and not archived',
        [teamId, newOwnerId],
      );
      if (members.length === 0) throw notFound('member', newOwnerId);
      await this.throttle(em, 'TEAM_OWNERSHIP_TRANSFER', userId);
      await verificationTokens.dropUnfinished(em, 'TEAM_OWNERSHIP_TRANSFER', userId, teamId);
      const data = { teamId, teamName: owned.teamName, currentOwnerId: userId, newOwnerId, newOwnerName: members[0]!.name };
      const tokens: NewToken[] = [
        { type: 'TEAM_OWNERSHIP_TRANSFER', userId, data: { ...data, target: 'old' } },
        { type: 'TEAM_OWNERSHIP_TRANSFER', userId: newOwnerId, data: { ...data, target: 'new' } },
      ];
      const { created } = await verificationTokens.createAction(em, tokens, TOKEN_TTL_MS.TEAM_OWNERSHIP_TRANSFER);
      return { owner: await userRow(em, userId), newOwner: await userRow(em, newOwnerId), created, teamName: owned.teamName };
    });
    const both = `The transfer happens once both of you have confirmed: ${owner.username} (the owner now) and ${newOwner.username} (the new owner).`;
    await this.mailToken({ userId: owner.id, address: owner.email }, 'TEAM_OWNERSHIP_TRANSFER', `Confirm the transfer of the team ${teamName}`, created[0]!.token, [
      `Hello ${owner.username},`, '', `someone (hopefully you) asked to transfer the ownership of the team ${teamName} to ${newOwner.username}.`, both,
    ]);
    await this.mailToken({ userId: newOwner.id, address: newOwner.email }, 'TEAM_OWNERSHIP_TRANSFER', `Accept the ownership of the team ${teamName}`, created[1]!.token, [
      `Hello ${newOwner.username},`, '', `${owner.username} wants to make you the owner of the team ${teamName}.`, both,
    ]);
    return created.map(({ row }) => tokenProgressView(row));
  }

  // ---- confirming -----------------------------------------------------------------------------

  /**
   * Confirms one token of an action (spec 2.7). A wrong, used or expired token: 403/410 and
   * nothing changes; an action that can no longer run (the new email taken, a member gone, a team
   * still owned): 409 and nothing changes. The last token runs the action.
   */
  async confirm(input: unknown): Promise<ConfirmResult> {
    const { token } = parseInput(confirmSchema, input);
    const afterCommit: (() => Promise<void>)[] = [];
    const result = await this.deps.orm.em.fork().transactional(async (em) => {
      const row = await this.usableToken(em, token, (found) => found.type !== EMAIL_VERIFY);
      const tokens = await verificationTokens.lockAction(em, row.actionId);
      // A disabled user acts no more, through a mailed token either (its sessions and keys stopped already).
      const disabled = await em.execute('select 1 from "user" where id in (?) and disabled', [[...new Set(tokens.map((token) => token.userId))]]);
      if (disabled.length > 0) throw userDisabled();
      const action = this.actions[row.type as ActionType];
      await action.check(em, row.data, tokens);
      await verificationTokens.markUsed(em, row.id);
      const usedAt = new Date();
      const completed = tokens.every((other) => other.id === row.id || other.usedAt !== null);
      if (completed) {
        const after = await action.run(em, row.data, tokens);
        if (after) afterCommit.push(after);
        await verificationTokens.lockAll(em, row.actionId);
      }
      return { type: row.type, completed, verificationActionToken: tokenProgressView({ ...row, usedAt, locked: completed }) };
    });
    // The action has happened: what follows its commit (removing objects, mailing a link) is retried
    // or redone elsewhere (the deletion queue's drain, a new export), so a failure here is logged, not answered.
    for (const after of afterCommit) {
      await after().catch((error: unknown) => this.deps.logger.error({ err: error, type: result.type }, 'a step after a verified action failed'));
    }
    return result;
  }

  /**
   * The token's row, held for the transaction, if it can be used; otherwise the refusal. Expiry is
   * checked on the locked row, so a token cannot be used twice by two racing confirms either.
   */
  private async usableToken(em: EntityManager, token: string, accepts: (row: TokenRow) => boolean): Promise<TokenRow> {
    if (!isTokenShaped(token)) throw verificationTokenRefused('invalid');
    const found = await verificationTokens.findByToken(em, token);
    if (!found || !accepts(found)) throw verificationTokenRefused('invalid');
    const row = (await verificationTokens.lockAction(em, found.actionId)).find((candidate) => candidate.id === found.id);
    if (!row) throw verificationTokenRefused('invalid');
    if (row.usedAt || row.locked) throw verificationTokenRefused('used');
    if (row.expiresAt.getTime() <= Date.now()) throw verificationTokenRefused('expired');
    return row;
  }

  /** The archive behind an export link: 403 for an altered link, 410 past its hour, 404 once the user is gone. */
  async openExport(userId: string, exportId: string, query: URLSearchParams): Promise<Record<string, unknown>> {
    if (!this.deps.exportLinks) throw notFound('export', exportId);
    checkExportLink(this.deps.exportLinks, userId, exportId, query);
    const archive = isUuid(userId) ? await buildAccountExport(this.deps.orm.em.fork(), userId) : null;
    if (!archive) throw notFound('user', userId);
    return archive;
  }

  // ---- helpers ----------------------------------------------------------------------------------

  private async startSingle(
    userId: string, type: ActionType, data: Record<string, unknown> | null, check: (em: EntityManager) => Promise<void>, subject: string, lines: string[], teamId?: string,
  ): Promise<TokenProgress[]> {
    const { user, created } = await this.deps.orm.em.fork().transactional(async (em) => {
      const user = await userRow(em, userId);
      await check(em);
      await this.throttle(em, type, userId);
      await verificationTokens.dropUnfinished(em, type, userId, teamId);
      return { user, ...(await verificationTokens.createAction(em, [{ type, userId, data }], TOKEN_TTL_MS[type])) };
    });
    await this.mailToken({ userId: user.id, address: user.email }, type, subject, created[0]!.token, [`Hello ${user.username},`, '', ...lines]);
    return created.map(({ row }) => tokenProgressView(row));
  }

  /** Every verification mail is about the account itself: SYSTEM, which the user cannot turn off by email. */
  private async mailToken(to: { userId: string; address: string }, type: ActionType, subject: string, token: string, lines: string[]): Promise<void> {
    await this.deps.mail.send({
      kind: `verification.${type}`,
      to: to.address,
      notification: { userId: to.userId, topic: 'SYSTEM' },
      subject,
      text: [
        ...lines,
        '',
        'Your confirmation token:',
        '',
        token,
        '',
        `To confirm, send it as {"token": "..."} to POST ${this.deps.publicUrl}${CONFIRM_PATH}.`,
        `It is valid for ${TOKEN_TTL_MS[type] / HOUR_MS} hour(s) and works once. If you did not ask for this, ignore this message: nothing happens without it.`,
      ].join('\n'),
    });
  }

  private async throttle(em: EntityManager, type: TokenType, userId: string): Promise<void> {
    const last = await verificationTokens.lastCreated(em, type, userId);
    if (!last) return;
    const wait = Math.ceil(START_INTERVAL_SECONDS - (Date.now() - new Date(last).getTime()) / 1000);
    if (wait > 0) throw tooManyRequests(wait, 'A confirmation mail was sent a moment ago; retry later');
  }
}
