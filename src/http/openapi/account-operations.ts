import { z } from 'zod';
import { linkManualAccountSchema } from '../../domain/accounts/account-data.ts';
import { startSignInSchema } from '../../domain/accounts/oauth-sign-in.service.ts';
import { acceptOwnInviteSchema } from '../../domain/invites/invite.service.ts';
import type { OperationDoc } from './operation-doc.ts';
import { teamMemberSchema } from './schemas.ts';
import { minimalAccountSchema, teamJoinInfoSchema } from './team-schemas.ts';
import { issuedSessionSchema } from './user-operations.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';

/** Sign-in with Discord and Google, linked accounts, and invites of the signed-in user (src/http/routes/users/; docs/accounts.md). */


const providerListSchema = z
  .object({
    providers: z.array(z.object({
      id: z.enum(['credential', 'discord', 'google']),
      type: z.enum(['credential', 'oauth']).meta({ description: 'credential: POST /v1/auth/sign-in; oauth: POST /v1/auth/oauth/{provider}/start.' }),
    })),
  })
  .meta({ id: 'SignInProviders' });

const providerRefusals = 'The state is missing, unknown, already used or expired (error.oauth.invalidState); or the provider refused: '
  + 'the user denied access, the code or PKCE verifier is wrong, the ID token does not check out (error.oauth.providerRefused, `value` the provider\'s error code). Nothing is created.';

export const accountOperations: Record<string, OperationDoc> = {
  'GET /v1/auth/providers': {
    operationId: 'listSignInProviders',
    summary: 'The ways to sign in',
    description: 'Always credential (email or username and password); discord and google when the service has their client id and secret.',
    tag: 'auth',
    access: 'public',
    responses: { 200: { description: 'Credential first.', schema: providerListSchema } },
    errors: {},
  },
  'POST /v1/auth/oauth/:provider/start': {
    operationId: 'startOAuthSignIn',
    summary: 'Start a sign-in (or a link) with Discord or Google',
    description: 'Answers the provider\'s authorization URL to send the browser to (authorization code with PKCE S256; google adds a nonce). '
      + 'The round is valid 10 minutes and works once. With a session token (`Authorization: Bearer tss_...`) it links the provider account to that user instead of signing in.',
    tag: 'auth',
    access: 'public',
    body: startSignInSchema.meta({ id: 'OAuthStartRequest' }),
    responses: { 200: { description: 'Where to send the browser.', schema: z.object({ authorizationUrl: z.url() }).meta({ id: 'OAuthStart' }) } },
    errors: {
      ...JSON_BODY_ERRORS,
      400: 'Invalid body, or returnTo is not on an allowed origin (PUBLIC_URL\'s or one of CORS_ORIGINS).',
      401: 'An Authorization header that is not a live session token.',
      404: 'No such provider, or it is not configured.',
      429: 'Too many sign-in requests from this address.',
      502: 'The provider could not be reached (OpenID Connect discovery; error.oauth.providerUnavailable).',
    },
  },
  'GET /v1/auth/oauth/:provider/callback': {
    operationId: 'finishOAuthSignIn',
    summary: 'The provider\'s redirect back: signs in, creates or links',
    description: 'The redirect URI registered at the provider: `{PUBLIC_URL}/v1/auth/oauth/{provider}/callback`. Consumes the round, exchanges the code with the PKCE verifier, reads the provider account, then: '
      + 'a link round links it to the user who started; otherwise its user signs in, or a new user is made (username from the provider name, the provider\'s email, verified only when the provider says so). '
      + 'An email that another user has is 409: that user signs in and links the provider. Answers the session as JSON, or, when the start gave returnTo, 302 there with `#token=...&expiresAt=...` in the fragment.',
    tag: 'auth',
    access: 'public',
    query: z.object({
      code: z.string().optional().meta({ description: 'From the provider.' }),
      state: z.string().optional().meta({ description: 'From the provider: the round\'s state.' }),
      error: z.string().optional().meta({ description: 'From the provider when it refused (access_denied...).' }),
    }),
    responses: {
      200: { description: 'Signed in (or linked, and signed in).', schema: issuedSessionSchema },
      302: { description: 'Signed in: Location is returnTo with `#token=...&expiresAt=...` (and `&clientState=...` when the start gave one) in the fragment.', headers: z.object({ Location: z.string() }) },
    },
    errors: {
      400: providerRefusals,
      403: 'The user is disabled (error.user.disabled).',
      404: 'No such provider, or it is not configured.',
      409: 'The provider account is linked to another user (error.account.linkedElsewhere), the user already has an account of this provider (error.account.providerLinked), '
        + 'or its email belongs to another user (error.account.emailTaken).',
      429: 'Too many sign-in requests from this address.',
      502: 'The provider could not be reached (error.oauth.providerUnavailable).',
    },
  },
  'GET /v1/users/me/accounts': {
    operationId: 'listMyAccounts',
    summary: 'The user\'s linked accounts',
    tag: 'users',
    access: 'sessionToken',
    responses: { 200: { description: 'Oldest first; minimal account info only.', schema: z.array(minimalAccountSchema) } },
    errors: {},
  },
  'POST /v1/users/me/accounts': {
    operationId: 'linkGameAccount',
    summary: 'Link (or change) a Minecraft or Hytale account',
    description: 'Only minecraft-manual and hytale-manual; discord and google link through POST /v1/auth/oauth/{provider}/start with a session token. '
      + '`data.username`: 3-16 of a-z A-Z 0-9 _; `data.targetId`: the player\'s UUID (dashes optional; stored lower case with dashes), which is the accountId. '
      + 'A user has at most one account per provider: posting again changes it.',
    tag: 'users',
    access: 'sessionToken',
    body: linkManualAccountSchema.meta({ id: 'LinkGameAccountRequest' }),
    bodyRequired: true,
    responses: {
      201: { description: 'Linked.', schema: minimalAccountSchema },
      200: { description: 'The user\'s account of this provider changed.', schema: minimalAccountSchema },
    },
    errors: { ...JSON_BODY_ERRORS, 400: 'Another providerId, or invalid data (the Error names the field).', 409: 'That game account is linked to another user (error.account.taken).' },
  },
  'DELETE /v1/users/me/accounts/:providerId': {
    operationId: 'unlinkAccount',
    summary: 'Unlink an account',
    description: 'Never the last way to sign in: a credential, discord or google account must remain (game accounts do not sign in).',
    tag: 'users',
    access: 'sessionToken',
    responses: { 204: { description: 'Unlinked.' } },
    errors: { 404: 'The user has no account of this provider.', 409: 'It is the last way to sign in (error.account.lastSignIn).' },
  },
  'GET /v1/invites/:inviteId': {
    operationId: 'getInviteJoinInfo',
    summary: 'What joining through an invite needs',
    description: 'The team (minimal), its join requirements and the user\'s linked accounts, to show before accepting.',
    tag: 'invites',
    access: 'sessionToken',
    responses: { 200: { description: 'Team join info.', schema: teamJoinInfoSchema } },
    errors: { 404: 'No such invite, or it has expired or been used.' },
  },
  'POST /v1/invites/:inviteId/accept': {
    operationId: 'acceptInviteAsUser',
    summary: 'Join the team of an invite',
    description: 'The signed-in user becomes a member in the invite\'s group (MEMBER_JOINED), as the operator route does for a user. '
      + 'Each join requirement of the team needs a linked account: discord, google, minecraft-manual (minecraft), hytale-manual (hytale).',
    tag: 'invites',
    access: 'sessionToken',
    body: acceptOwnInviteSchema.meta({ id: 'InviteAcceptOwnRequest' }),
    responses: { 201: { description: 'The new member.', schema: teamMemberSchema } },
    errors: {
      ...JSON_BODY_ERRORS,
      402: 'The team has reached maxMembers (error.teamLimits.maxMembers).',
      403: 'A join requirement is not met (`value` names it: discord, google, minecraft or hytale), or the team is archived.',
      404: 'No such invite, or it has expired or been used.',
      409: 'The user is already a member, or a current member has that name.',
    },
  },
};
