import { z } from 'zod';
import { ACTION_TYPES, EMAIL_VERIFY } from '../../domain/verification/verification-token.ts';
import { confirmSchema, emailChangeSchema, ownershipTransferSchema } from '../../domain/verification/verification.service.ts';
import type { OperationDoc } from './operation-doc.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';

/** Verification action tokens, email verification, account actions and exports (src/http/routes/users/verification-routes.ts; docs/accounts.md). */

const id = z.uuid();
const timestamp = z.iso.datetime();
const TOKEN_ERRORS = {
  403: 'No such token (error.verification.tokenInvalid).',
  410: 'The token was used, or its action ran (error.verification.tokenUsed), or it expired (error.verification.tokenExpired).',
  429: 'Too many failed authentications from this address (wrong tokens count with wrong keys); retry after Retry-After seconds.',
};
const STARTED = 'The action is recorded and its confirmation mails are sent (a mail that fails stays in the outbox and is retried).';
const THROTTLED = 'The same action was asked for less than a minute ago; retry after Retry-After seconds.';

export const tokenProgressSchema = z
  .object({
    id,
    type: z.enum(ACTION_TYPES),
    userId: id.meta({ description: 'Whose token it is: the user it was mailed to.' }),
    data: z.record(z.string(), z.unknown()).nullable().meta({ description: 'Per type, as spec 2.7 shapes it (docs/accounts.md).' }),
    createdAt: timestamp,
    usedAt: timestamp.nullable().meta({ description: 'When it was confirmed.' }),
    locked: z.boolean().meta({ description: 'The action ran: no token of it can be used any more.' }),
  })
  .meta({ id: 'VerificationActionTokenProgress', description: 'Spec 2.7\'s progress variant: the token itself is never shown again.' });

const progressList = z.array(tokenProgressSchema).meta({ id: 'VerificationActionTokenProgressList' });

const confirmResultSchema = z
  .object({
    type: z.enum(ACTION_TYPES),
    completed: z.boolean().meta({ description: 'True when this was the action\'s last token and the action ran.' }),
    verificationActionToken: tokenProgressSchema,
  })
  .meta({ id: 'VerificationConfirmResult' });

const emailVerifiedSchema = z.object({ isEmailVerified: z.literal(true), emailVerified: timestamp }).meta({ id: 'EmailVerified' });

const accountExportSchema = z
  .object({
    exportedAt: timestamp,
    user: z.record(z.string(), z.unknown()).meta({ description: 'The user record.' }),
    accounts: z.array(z.object({ accountId: z.string(), providerId: z.string(), data: z.unknown(), createdAt: timestamp })),
    memberships: z.array(z.object({
      memberId: id, teamId: id, teamName: z.string(), name: z.string(), isTeamOwner: z.boolean(), joinedTeamAt: timestamp, leftTeamAt: timestamp.nullable(),
    })),
    sessions: z.array(z.object({
      id, method: z.string(), createdAt: timestamp, lastUsedAt: timestamp, expiresAt: timestamp, ip: z.string().nullable(), userAgent: z.string().nullable(),
    })),
  })
  .meta({ id: 'AccountExport', description: 'No secrets: no password hash, provider tokens or session tokens.' });

const ownerOnly = {
  401: 'No valid session token; or the user is not a member of the team (as on every team route).',
  403: 'The user is a member but not the team\'s owner.',
  429: THROTTLED,
};

export const verificationOperations: Record<string, OperationDoc> = {
  'POST /v1/auth/verification-tokens/confirm': {
    operationId: 'confirmVerificationToken',
    summary: 'Confirm a verification action token',
    description: 'The token from the mail is the credential: no session needed. When it is the action\'s last token, the action runs, in the same transaction.',
    tag: 'verification',
    access: 'public',
    body: confirmSchema.meta({ id: 'VerificationTokenRequest' }),
    bodyRequired: true,
    responses: { 200: { description: 'Confirmed.', schema: confirmResultSchema } },
    errors: {
      ...JSON_BODY_ERRORS,
      ...TOKEN_ERRORS,
      403: 'No such token (error.verification.tokenInvalid), or a user of the action is disabled (error.user.disabled).',
      409: 'The action can no longer run: the new email is taken, a member of a transfer left or the owner changed, the team is gone, or the user still owns a team (account deletion). Nothing changes.',
    },
  },
  'POST /v1/auth/verify-email': {
    operationId: 'verifyEmail',
    summary: 'Verify the email address with the token mailed at sign-up',
    description: `The token (internal type ${EMAIL_VERIFY}) must have been mailed to the user's current address.`,
    tag: 'verification',
    access: 'public',
    body: confirmSchema.meta({ id: 'VerifyEmailRequest' }),
    bodyRequired: true,
    responses: { 200: { description: 'The address is verified.', schema: emailVerifiedSchema } },
    errors: { ...JSON_BODY_ERRORS, ...TOKEN_ERRORS },
  },
  'POST /v1/users/me/email/verification': {
    operationId: 'resendEmailVerification',
    summary: 'Mail a new email verification token',
    description: 'The token mailed before stops working.',
    tag: 'verification',
    access: 'sessionToken',
    responses: { 202: { description: 'Mailed.' } },
    errors: { 409: 'The address is verified already.', 429: 'A verification mail was sent less than a minute ago; retry after Retry-After seconds.' },
  },
  'GET /v1/users/me/verification-tokens': {
    operationId: 'listVerificationTokens',
    summary: 'Progress of the signed-in user\'s verification action tokens',
    description: 'Newest first, until they expire; the tokens themselves are never shown.',
    tag: 'verification',
    access: 'sessionToken',
    responses: { 200: { description: 'The progress list.', schema: progressList } },
    errors: {},
  },
  'POST /v1/users/me/email': {
    operationId: 'startEmailChange',
    summary: 'Change the email address (ACCOUNT_EMAIL_CHANGE)',
    description: 'Mails a token to the current address (target old) and one to the new (target new); the address changes once both are confirmed. Sessions stay.',
    tag: 'verification',
    access: 'sessionToken',
    body: emailChangeSchema.meta({ id: 'EmailChangeRequest' }),
    bodyRequired: true,
    responses: { 202: { description: STARTED, schema: progressList } },
    errors: { ...JSON_BODY_ERRORS, 409: 'The new address is taken, or is the current one.', 429: THROTTLED },
  },
  'POST /v1/users/me/deletion': {
    operationId: 'startAccountDeletion',
    summary: 'Delete the account (ACCOUNT_DELETE)',
    description: 'Mails one token; on confirm the user, its linked accounts, sessions and memberships are removed.',
    tag: 'verification',
    access: 'sessionToken',
    responses: { 202: { description: STARTED, schema: progressList } },
    errors: { 409: 'The user owns a team (transfer its ownership or delete it first), or pays a team\'s running subscription.', 429: THROTTLED },
  },
  'POST /v1/users/me/export': {
    operationId: 'startAccountExport',
    summary: 'Export the account\'s data (ACCOUNT_EXPORT)',
    description: 'Mails one token; on confirm, a link to the JSON archive, signed for one hour, is mailed.',
    tag: 'verification',
    access: 'sessionToken',
    responses: { 202: { description: STARTED, schema: progressList } },
    errors: { 429: THROTTLED },
  },
  'GET /v1/account-exports/:userId/:exportId': {
    operationId: 'downloadAccountExport',
    summary: 'Download an account export (the mailed link)',
    description: 'Only with the link\'s own `expires` and `signature`; built when opened.',
    tag: 'verification',
    access: 'public',
    query: z.object({
      expires: z.string().meta({ description: 'Unix seconds, as the link has it.', param: { id: 'ExportExpires' } }),
      signature: z.string().meta({ description: 'As the link has it.', param: { id: 'ExportSignature' } }),
    }),
    responses: {
      200: {
        description: 'The archive, as a download.',
        schema: accountExportSchema,
        headers: z.object({ 'Content-Disposition': z.string().meta({ description: '`attachment; filename="account-export-<userId>.json"`.', header: { id: 'ExportDisposition' } }) }),
      },
    },
    errors: { 403: 'The link was altered (error.accountExport.linkInvalid).', 404: 'The user is gone.', 410: 'The link is past its hour (error.accountExport.linkExpired).' },
  },
  'POST /v1/teams/:teamId/ownership-transfer': {
    operationId: 'startTeamOwnershipTransfer',
    summary: 'Transfer the team\'s ownership (TEAM_OWNERSHIP_TRANSFER)',
    description: 'By the owner, in a signed-in session (not an API key). Mails a token to the owner (target old) and one to the new owner (target new); both confirm.',
    tag: 'verification',
    access: 'sessionToken',
    body: ownershipTransferSchema.meta({ id: 'OwnershipTransferRequest' }),
    bodyRequired: true,
    responses: { 202: { description: STARTED, schema: progressList } },
    errors: { ...JSON_BODY_ERRORS, ...ownerOnly, 404: 'newOwnerId is not a current member of the team.', 409: 'newOwnerId is the owner.' },
  },
  'POST /v1/teams/:teamId/deletion': {
    operationId: 'startTeamDeletion',
    summary: 'Delete the team (TEAM_DELETE)',
    description: 'By the owner, in a signed-in session. Mails one token; on confirm the team and everything it has (rows and stored objects) are removed.',
    tag: 'verification',
    access: 'sessionToken',
    responses: { 202: { description: STARTED, schema: progressList } },
    errors: ownerOnly,
  },
};
