import { z } from 'zod';
import { changePasswordSchema, signInSchema, signUpSchema } from '../../domain/users/credential.service.ts';
import { updateMeSchema, userPermissionsSchema } from '../../domain/users/user-profile.service.ts';
import {
  NOTIFICATION_CHANNELS, NOTIFICATION_FREQUENCIES, NOTIFICATION_TOPICS, updateNotificationSettingsSchema,
} from '../../domain/notifications/notification-preference.service.ts';
import { exchangeCodeSchema, LAUNCHER_CODE_TTL_SECONDS, startCodeSchema } from '../../domain/launcher/launcher-code.service.ts';
import type { OperationDoc } from './operation-doc.ts';
import { tokenProgressSchema } from './verification-operations.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';
import { apiKeySchema } from './schemas.ts';

/** Accounts, sign-in and sessions (src/http/routes/users/, src/http/routes/operator/user-operator-routes.ts; docs/accounts.md). */

const id = z.uuid();
const timestamp = z.iso.datetime();

const callingApiKeySchema = apiKeySchema
  .omit({ key: true })
  .extend({ permissions: z.array(z.string()).meta({ description: 'What the key may do on its team, sorted.' }) })
  .meta({ id: 'CallingApiKey' });

export const userSchema = z
  .object({
    id,
    username: z.string().regex(/^[a-zA-Z0-9_]{3,20}$/),
    changedUsernameAt: timestamp.meta({ description: 'The Unix epoch until the first change.' }),
    email: z.email(),
    emailVerified: timestamp.nullable(),
    isEmailVerified: z.boolean(),
    image: z.string().nullable(),
    stripeCustomerId: z.string().nullable(),
    coins: z.int(),
    createdAt: timestamp,
    updatedAt: timestamp,
    lastLoginAt: timestamp,
    disabled: z.boolean(),
    disabledAt: timestamp.nullable(),
    welcomeScreen: z.boolean(),
    permissions: z.array(z.string()).meta({ description: 'Global (operator-level) permissions, set by the operator; distinct from team permissions.' }),
    migrated: z.boolean(),
    migratedId: z.string().nullable(),
  })
  .meta({ id: 'User' });

export const userWithProgressSchema = userSchema
  .extend({ verificationActionTokens: z.array(tokenProgressSchema).nullable().meta({ description: 'Unexpired tokens mailed to the user (docs/accounts.md).' }) })
  .meta({ id: 'UserWithVerificationProgress' });

export const sessionSchema = z
  .object({
    id,
    method: z.enum(['password', 'discord', 'google', 'launcher']).meta({ description: 'How the session was signed in.' }),
    createdAt: timestamp,
    lastUsedAt: timestamp.meta({ description: 'When it was last renewed (at most hourly).' }),
    expiresAt: timestamp.meta({ description: 'SESSION_TTL_DAYS after its last renewal.' }),
    ip: z.string().nullable(),
    userAgent: z.string().nullable(),
    current: z.boolean().meta({ description: 'Whether it is the session making this request.' }),
  })
  .meta({ id: 'Session' });

export const issuedSessionSchema = z
  .object({
    token: z.string().regex(/^tss_[A-Za-z0-9_-]{43}$/).meta({ description: 'The session token, shown only here: send it as `Authorization: Bearer <token>`.' }),
    expiresAt: timestamp,
    session: sessionSchema,
    user: userSchema,
  })
  .meta({ id: 'IssuedSession' });

const membershipSchema = z
  .object({
    team: z.object({ id, name: z.string(), logo: z.string().nullable(), priceId: z.string().nullable() }),
    memberId: id,
    name: z.string(),
    isTeamOwner: z.boolean(),
    joinedTeamAt: timestamp,
  })
  .meta({ id: 'UserMembership' });

export const launcherCodeSchema = z
  .object({
    id,
    identifier: z.string().regex(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/).meta({ description: 'The code a person approves: show it, or put it in the approval link.' }),
    userId: id.nullable().meta({ description: 'The approving user; null until approved.' }),
    expires: timestamp.meta({ description: `${LAUNCHER_CODE_TTL_SECONDS / 60} minutes after creation.` }),
    createdAt: timestamp,
    codeChallenge: z.string().nullable(),
    clientName: z.string().nullable(),
    approved: z.boolean(),
    skipAuth: z.boolean().meta({ description: 'True when the code was started with a session token: it is approved already, nobody needs to approve it, and the launcher may exchange it at once.' }),
  })
  .meta({ id: 'AuthSessionCode' });

const notificationSettingsSchema = z
  .object({
    preferences: z.array(z.object({
      topic: z.enum(NOTIFICATION_TOPICS),
      channel: z.enum(NOTIFICATION_CHANNELS),
      enabled: z.boolean().meta({ description: 'For PRODUCT_UPDATES and MARKETING, consent.' }),
      frequency: z.enum(NOTIFICATION_FREQUENCIES),
      confirmedAt: timestamp.nullable().meta({ description: 'When consent was given (set by the service; null while off, and for SYSTEM).' }),
    }).meta({ id: 'NotificationPreference' })),
  })
  .meta({ id: 'NotificationSettings', description: 'Every topic on every channel; pairs never set have their defaults (only SYSTEM by EMAIL on).' });

const throttled = 'Too many failed sign-ins for this login or from this address (SIGN_IN_LIMIT_*); retry after Retry-After seconds.';

export const userOperations: Record<string, OperationDoc> = {
  'POST /v1/auth/sign-up': {
    operationId: 'signUp',
    summary: 'Create a user with email and password, signed in',
    description: 'The email starts unverified. Emails and usernames are unique whatever their case.',
    tag: 'auth',
    access: 'public',
    body: signUpSchema.meta({ id: 'SignUpRequest' }),
    bodyRequired: true,
    responses: { 201: { description: 'The user, signed in.', schema: issuedSessionSchema } },
    errors: {
      ...JSON_BODY_ERRORS,
      403: 'Sign-up is closed (SIGN_UP_ENABLED=false; error.user.signUpClosed).',
      409: 'The email (error.user.emailTaken) or username (error.user.usernameTaken) is taken.',
    },
  },
  'POST /v1/auth/sign-in': {
    operationId: 'signIn',
    summary: 'Sign in with email or username and password',
    tag: 'auth',
    access: 'public',
    body: signInSchema.meta({ id: 'SignInRequest' }),
    bodyRequired: true,
    responses: { 200: { description: 'A new session.', schema: issuedSessionSchema } },
    errors: { ...JSON_BODY_ERRORS, 401: 'Unknown login or wrong password (one answer for both).', 403: 'The user is disabled (error.user.disabled).', 429: throttled },
  },
  'POST /v1/auth/sign-out': {
    operationId: 'signOut',
    summary: 'End the current session',
    tag: 'auth',
    access: 'sessionToken',
    responses: { 204: { description: 'The session token no longer works, on any instance.' } },
    errors: {},
  },
  'GET /v1/auth/key': {
    operationId: 'getCallingApiKey',
    summary: 'The calling team API key: its team and what it may do',
    description: 'For a client that holds only a key (the dashboard\'s key sign-in, a script): the key as ApiKeyInfo (its `teamId`, `id`, '
      + '`description`, linked member and `scopes`, never its secret) and `permissions`, what it may do on its team (its member\'s own and groups\', '
      + 'every permission for a key that acts as the owner). A key narrowed by a scope is answered too. A session token is not a key: 401 '
      + '(a signed-in user lists its teams with GET /v1/users/me/teams).',
    tag: 'auth',
    access: 'teamApiKeyOnly',
    responses: { 200: { description: 'The key.', schema: callingApiKeySchema } },
    errors: { 401: 'No key, or an unknown, rerolled or deleted one (its member left, or its user is disabled), or a session token.' },
  },
  'GET /v1/users/me': {
    operationId: 'getMe',
    summary: 'The signed-in user',
    tag: 'users',
    access: 'sessionToken',
    responses: { 200: { description: 'The user, with the progress of its verification action tokens (spec 2.5).', schema: userWithProgressSchema } },
    errors: {},
  },
  'PATCH /v1/users/me': {
    operationId: 'updateMe',
    summary: 'Change the username, image or welcome screen flag',
    tag: 'users',
    access: 'sessionToken',
    body: updateMeSchema.meta({ id: 'UpdateMeRequest' }),
    responses: { 200: { description: 'The user.', schema: userSchema } },
    errors: {
      ...JSON_BODY_ERRORS,
      409: 'The username is taken (error.user.usernameTaken).',
      429: 'The username changed less than USERNAME_CHANGE_COOLDOWN_DAYS ago (error.user.usernameCooldown; `value` is when it may change), or the session\'s rate limit.',
    },
  },
  'POST /v1/users/me/password': {
    operationId: 'changePassword',
    summary: 'Change (or set a first) password',
    description: 'Every session of the user ends, this one included; the answer is a new session for the caller.',
    tag: 'users',
    access: 'sessionToken',
    body: changePasswordSchema.meta({ id: 'ChangePasswordRequest' }),
    bodyRequired: true,
    responses: { 200: { description: 'A new session.', schema: issuedSessionSchema } },
    errors: { ...JSON_BODY_ERRORS, 403: 'The current password is wrong.', 429: 'Too many wrong current passwords, or the session\'s rate limit.' },
  },
  'GET /v1/users/me/notification-settings': {
    operationId: 'getNotificationSettings',
    summary: 'The user\'s notification preferences',
    tag: 'users',
    access: 'sessionToken',
    responses: { 200: { description: 'All nine topic and channel pairs.', schema: notificationSettingsSchema } },
    errors: {},
  },
  'PUT /v1/users/me/notification-settings': {
    operationId: 'updateNotificationSettings',
    summary: 'Change notification preferences',
    description: 'Only the pairs given change; a field left out keeps its value. SYSTEM by EMAIL cannot be turned off or muted.',
    tag: 'users',
    access: 'sessionToken',
    body: updateNotificationSettingsSchema.meta({ id: 'UpdateNotificationSettingsRequest' }),
    bodyRequired: true,
    responses: { 200: { description: 'All nine pairs after the change.', schema: notificationSettingsSchema } },
    errors: { ...JSON_BODY_ERRORS, 400: 'Invalid body, a pair given twice, or SYSTEM by EMAIL turned off or muted.' },
  },
  'GET /v1/users/me/teams': {
    operationId: 'listMyTeams',
    summary: 'The teams the user is a member of',
    description: 'The session token acts on these teams\' routes with the membership\'s permissions.',
    tag: 'users',
    access: 'sessionToken',
    responses: { 200: { description: 'Oldest membership first.', schema: z.array(membershipSchema) } },
    errors: {},
  },
  'GET /v1/users/me/sessions': {
    operationId: 'listSessions',
    summary: 'The user\'s live sessions',
    tag: 'users',
    access: 'sessionToken',
    responses: { 200: { description: 'Most recently renewed first; tokens are never shown again.', schema: z.array(sessionSchema) } },
    errors: {},
  },
  'DELETE /v1/users/me/sessions': {
    operationId: 'revokeOtherSessions',
    summary: 'Sign out everywhere else',
    tag: 'users',
    access: 'sessionToken',
    responses: { 200: { description: 'How many sessions ended.', schema: z.object({ revoked: z.int().min(0) }) } },
    errors: {},
  },
  'DELETE /v1/users/me/sessions/:sessionId': {
    operationId: 'revokeSession',
    summary: 'End one of the user\'s sessions',
    tag: 'users',
    access: 'sessionToken',
    responses: { 204: { description: 'Its token no longer works, on any instance.' } },
    errors: { 404: 'No such session of this user.' },
  },
  'POST /v1/auth/launcher/codes': {
    operationId: 'startLauncherSignIn',
    summary: 'Start a launcher sign-in code (PKCE)',
    description: 'Anyone may start one; with a session token it is approved by that session\'s user at once (skipAuth). Keep the code verifier secret: only it exchanges the code.',
    tag: 'auth',
    access: 'public',
    body: startCodeSchema.meta({ id: 'StartLauncherCodeRequest' }),
    bodyRequired: true,
    responses: { 201: { description: 'The code.', schema: launcherCodeSchema } },
    errors: { ...JSON_BODY_ERRORS, 401: 'An Authorization header that is not a live session token.', 429: 'Too many failed attempts from this address.' },
  },
  'GET /v1/auth/launcher/codes/:code': {
    operationId: 'getLauncherCode',
    summary: 'A code about to be approved',
    tag: 'auth',
    access: 'sessionToken',
    responses: { 200: { description: 'The code.', schema: launcherCodeSchema } },
    errors: { 404: 'No such live, unused code.' },
  },
  'POST /v1/auth/launcher/codes/:code/approve': {
    operationId: 'approveLauncherCode',
    summary: 'Approve a code as the signed-in user',
    description: 'The launcher holding the code\'s verifier can then sign in as this user.',
    tag: 'auth',
    access: 'sessionToken',
    responses: { 200: { description: 'The approved code.', schema: launcherCodeSchema } },
    errors: { 404: 'No such live, unused code.', 409: 'Already approved (error.launcher.alreadyApproved).' },
  },
  'POST /v1/auth/launcher/token': {
    operationId: 'exchangeLauncherCode',
    summary: 'Exchange an approved code and its verifier for a session',
    description: 'Poll every few seconds while the answer is 409 error.launcher.pending. A code is exchanged once.',
    tag: 'auth',
    access: 'public',
    body: exchangeCodeSchema.meta({ id: 'ExchangeLauncherCodeRequest' }),
    bodyRequired: true,
    responses: { 200: { description: 'A session of the approving user.', schema: issuedSessionSchema } },
    errors: {
      ...JSON_BODY_ERRORS,
      400: 'Invalid body; unknown, expired or used code (error.launcher.invalidCode); verifier not matching the challenge (error.launcher.invalidVerifier).',
      403: 'The approving user is disabled (error.user.disabled).',
      409: 'Not approved yet (error.launcher.pending): ask again.',
      429: 'Too many failed exchanges from this address.',
    },
  },
  'GET /v1/admin/users/:userId': {
    operationId: 'getUser',
    summary: 'Read a user',
    tag: 'operator',
    access: 'authSecret',
    responses: { 200: { description: 'The user.', schema: userSchema } },
    errors: { 404: 'No such user.' },
  },
  'POST /v1/admin/users/:userId/disable': {
    operationId: 'disableUser',
    summary: 'Disable a user',
    description: 'Its sessions end and the keys linked to its memberships stop, at once on every instance; it cannot sign in until enabled.',
    tag: 'operator',
    access: 'authSecret',
    responses: { 200: { description: 'The user.', schema: userSchema } },
    errors: { 404: 'No such user.' },
  },
  'POST /v1/admin/users/:userId/enable': {
    operationId: 'enableUser',
    summary: 'Enable a disabled user',
    description: 'It can sign in again; its linked keys work again.',
    tag: 'operator',
    access: 'authSecret',
    responses: { 200: { description: 'The user.', schema: userSchema } },
    errors: { 404: 'No such user.' },
  },
  'PUT /v1/admin/users/:userId/permissions': {
    operationId: 'setUserPermissions',
    summary: 'Set a user\'s global permissions',
    tag: 'operator',
    access: 'authSecret',
    body: userPermissionsSchema.meta({ id: 'UserPermissionsRequest' }),
    bodyRequired: true,
    responses: { 200: { description: 'The user.', schema: userSchema } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such user.' },
  },
};
