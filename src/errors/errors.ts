import { ServiceError } from './service-error.ts';

/**
 * The error catalogue. Routes and services throw these factories' results and
 * never build an error body by hand; the names, statuses and message keys of
 * spec section 7 live only here.
 */

export function unauthorized(message = 'Authentication failed'): ServiceError {
  return new ServiceError({ name: 'UnauthorizedError', status: 401, messageKey: 'error.unauthorized', message });
}

export function forbidden(message = 'User is forbidden to perform this action', value?: string): ServiceError {
  return new ServiceError({ name: 'ForbiddenError', status: 403, messageKey: 'error.forbidden', message, value });
}

/** A change to an archived team (docs/team-admin.md lists what an archived team can still do). */
export function teamArchived(): ServiceError {
  return new ServiceError({
    name: 'ForbiddenError', status: 403, messageKey: 'error.team.archived', message: 'The team is archived: unarchive it to make changes',
  });
}

export function notFound(what = 'resource', value?: string): ServiceError {
  return new ServiceError({ name: 'NotFoundError', status: 404, messageKey: 'error.notFound', message: `Could not find ${what}`, value });
}

export function routeNotFound(method: string, path: string): ServiceError {
  return new ServiceError({
    name: 'NotFoundError', status: 404, messageKey: 'error.notFound', message: `There is no such route: ${method} ${path} (GET /docs lists the routes)`,
  });
}

/** A path whose team id is empty or not a UUID: no team can have it. */
export function invalidTeamId(teamId: string): ServiceError {
  return new ServiceError({
    name: 'NotFoundError',
    status: 404,
    messageKey: 'error.notFound',
    message: `Could not find team "${teamId}": a team id is a UUID, the team.id that team creation answered (GET /v1/admin/teams lists them)`,
    value: teamId,
  });
}

export function badRequest(message = 'The request was formatted incorrectly.', value?: string | number): ServiceError {
  return new ServiceError({ name: 'BadRequestError', status: 400, messageKey: 'error.badRequest', message, value });
}

export function missingArgument(argument: string): ServiceError {
  return new ServiceError({
    name: 'MissingArgumentError',
    status: 400,
    messageKey: `error.missingArgument.${argument}`,
    message: `Missing argument: ${argument}.`,
    value: argument,
  });
}

export function teamLimit(limitKey: string, message: string, value?: number | string): ServiceError {
  return new ServiceError({ name: 'TeamLimitError', status: 402, messageKey: `error.teamLimits.${limitKey}`, message, value });
}

/** How an operator lifts a team's plan limit (docs/operations.md, "Plans"). */
const RAISE_THE_LIMIT = 'an operator raises it by moving the team to a larger plan (PUT /v1/admin/teams/{teamId}/plan with {"plan": "enterprise"}) '
  + 'or by overriding the limit for the team (PATCH /v1/admin/teams/{teamId}/limits)';

function sizeText(bytes: number): string {
  const readable = bytes >= 1_000_000 ? `${+(bytes / 1_000_000).toFixed(1)} MB` : `${+(bytes / 1000).toFixed(1)} kB`;
  return `${bytes} bytes (${readable})`;
}

/** A file's size as far as it is known: exact, or a lower bound (still arriving, or judged from the body's length). */
export interface FileSize {
  bytes: number;
  atLeast?: boolean;
}

/** 402 maxMediaFileSize: the file is above the team's per-file limit (`value`: the limit in bytes). */
export function fileAboveSizeLimit(limitBytes: number, file: FileSize): ServiceError {
  const size = `${file.atLeast ? 'at least ' : ''}${sizeText(file.bytes)}`;
  return teamLimit(
    'maxMediaFileSize',
    `The file is larger than the team's limit: it is ${size}, the limit (maxMediaFileSize) is ${sizeText(limitBytes)} per file; ${RAISE_THE_LIMIT}`,
    limitBytes,
  );
}

/** 402 maxTeamStorage: the file does not fit in what the team's storage limit leaves (`limitKiB`: the limit, when known). */
export function teamStorageFull(file: FileSize | null, limitKiB: number | null = null): ServiceError {
  const what = file ? `the file (${file.atLeast ? 'at least ' : ''}${sizeText(file.bytes)})` : 'the file';
  const limit = limitKiB === null ? 'the team\'s storage limit (maxTeamStorage)' : `the team's storage limit (maxTeamStorage) of ${limitKiB} KiB, ${sizeText(limitKiB * 1024)}`;
  return teamLimit('maxTeamStorage', `The team storage is full: ${what} does not fit in what is left of ${limit}; delete files, or ${RAISE_THE_LIMIT}`, 'maxTeamStorage');
}

export function conflict(message: string, value?: string): ServiceError {
  return new ServiceError({ name: 'ConflictError', status: 409, messageKey: 'error.conflict', message, value });
}

export function methodNotAllowed(method: string, path: string, allowed: string[]): ServiceError {
  return new ServiceError({
    name: 'MethodNotAllowedError',
    status: 405,
    messageKey: 'error.methodNotAllowed',
    message: `Method ${method} is not allowed on ${path}`,
    headers: { Allow: allowed.join(', ') },
  });
}

export function payloadTooLarge(limitBytes: number): ServiceError {
  return new ServiceError({
    name: 'PayloadTooLargeError',
    status: 413,
    messageKey: 'error.payloadTooLarge',
    message: `The request body is larger than ${limitBytes} bytes`,
    value: limitBytes,
  });
}

/** The request's header block (request line, header names and values) is larger than `limitBytes`. */
export function requestHeaderFieldsTooLarge(limitBytes: number): ServiceError {
  return new ServiceError({
    name: 'RequestHeaderFieldsTooLargeError',
    status: 431,
    messageKey: 'error.requestHeaderFieldsTooLarge',
    message: `The request headers are larger than ${limitBytes} bytes`,
    value: limitBytes,
  });
}

/** The request body stopped arriving for `idleSeconds` (a stuck or too slow client). */
export function requestTimeout(idleSeconds: number): ServiceError {
  return new ServiceError({
    name: 'RequestTimeoutError',
    status: 408,
    messageKey: 'error.requestTimeout',
    message: `The request body stopped arriving for ${idleSeconds} seconds`,
    value: idleSeconds,
  });
}

/** tus: the request's Tus-Resumable names a protocol version the server does not speak. */
export function tusVersionUnsupported(supported: string): ServiceError {
  return new ServiceError({
    name: 'PreconditionFailedError',
    status: 412,
    messageKey: 'error.tus.versionUnsupported',
    message: `Tus-Resumable must be ${supported}`,
    value: supported,
    headers: { 'Tus-Version': supported },
  });
}

/** tus: another request is appending to this upload right now (on any instance). */
export function uploadLocked(uploadId: string): ServiceError {
  return new ServiceError({
    name: 'LockedError',
    status: 423,
    messageKey: 'error.tus.locked',
    message: 'Another request is appending to this upload; retry once it has ended',
    value: uploadId,
  });
}

/** tus: Upload-Offset is not where the upload stands. */
export function uploadOffsetConflict(offset: number): ServiceError {
  return new ServiceError({
    name: 'ConflictError',
    status: 409,
    messageKey: 'error.tus.offsetConflict',
    message: `Upload-Offset does not match the upload's offset ${offset}`,
    value: offset,
  });
}

export function unsupportedMediaType(message: string, value?: string): ServiceError {
  return new ServiceError({ name: 'UnsupportedMediaTypeError', status: 415, messageKey: 'error.unsupportedMediaType', message, value });
}

export function tooManyRequests(retryAfterSeconds: number, message = 'Rate limit exceeded'): ServiceError {
  return new ServiceError({
    name: 'TooManyRequestsError',
    status: 429,
    messageKey: 'error.tooManyRequests',
    message,
    value: retryAfterSeconds,
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}

export function uploadBusy(retryAfterSeconds: number, message = 'Upload capacity is temporarily busy, retry later'): ServiceError {
  return new ServiceError({
    name: 'ServiceUnavailableError',
    status: 503,
    messageKey: 'error.media.uploadBusy',
    message,
    value: retryAfterSeconds,
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}

export function serviceUnavailable(message = 'The service is not accepting requests right now', retryAfterSeconds = 5, cause?: unknown): ServiceError {
  return new ServiceError({
    name: 'ServiceUnavailableError',
    status: 503,
    messageKey: 'error.serviceUnavailable',
    message,
    headers: { 'Retry-After': String(retryAfterSeconds) },
    cause,
  });
}

export function internalServerError(requestId?: string): ServiceError {
  return new ServiceError({
    name: 'ServiceError',
    status: 500,
    messageKey: 'error.internalServerError',
    message: 'An unexpected error occurred',
    value: requestId,
  });
}

/** Why an upload URL is refused before its body is read (docs/upload-urls.md). */
export type UploadUrlRefusal = 'invalid' | 'expired' | 'used' | 'inUse' | 'revoked';

export function uploadUrlRefused(reason: UploadUrlRefusal): ServiceError {
  switch (reason) {
    case 'invalid':
      return new ServiceError({ name: 'ForbiddenError', status: 403, messageKey: 'error.media.uploadUrlInvalid', message: 'The upload URL is not valid' });
    case 'expired':
      return new ServiceError({ name: 'GoneError', status: 410, messageKey: 'error.media.uploadUrlExpired', message: 'The upload URL has expired' });
    case 'used':
      return new ServiceError({ name: 'GoneError', status: 410, messageKey: 'error.media.uploadUrlUsed', message: 'The upload URL has been used' });
    case 'inUse':
      return new ServiceError({ name: 'ConflictError', status: 409, messageKey: 'error.media.uploadUrlInUse', message: 'An upload to this URL is running' });
    case 'revoked':
      return new ServiceError({
        name: 'ForbiddenError', status: 403, messageKey: 'error.media.uploadUrlRevoked',
        message: 'The key or session that made this upload URL can no longer upload to the team',
      });
  }
}

/** The key or session that created a tus upload can no longer upload to the team: the upload is terminated. */
export function tusUploadRevoked(uploadId: string): ServiceError {
  return new ServiceError({
    name: 'ForbiddenError', status: 403, messageKey: 'error.tus.uploadRevoked',
    message: 'The key or session that created this upload can no longer upload to the team; the upload was terminated', value: uploadId,
  });
}

/** A PATCH to a tus upload that is complete: it takes no more bytes (docs/resumable-uploads.md). */
export function tusUploadComplete(uploadId: string): ServiceError {
  return new ServiceError({
    name: 'ForbiddenError', status: 403, messageKey: 'error.tus.uploadComplete', message: 'The upload is complete and takes no more bytes', value: uploadId,
  });
}

/** The file is larger than the upload URL allows (its maxSizeBytes). */
export function fileTooLarge(limitBytes: number): ServiceError {
  return new ServiceError({
    name: 'PayloadTooLargeError',
    status: 413,
    messageKey: 'error.payloadTooLarge',
    message: `The file is larger than the upload URL's limit of ${limitBytes} bytes`,
    value: limitBytes,
  });
}

/** An upload asked to have its metadata stripped is an image too large to strip (STRIP_METADATA_MAX_MIB). */
export function imageTooLargeToStrip(limitBytes: number): ServiceError {
  return new ServiceError({
    name: 'PayloadTooLargeError',
    status: 413,
    messageKey: 'error.media.stripMetadataTooLarge',
    message: `Metadata can be stripped from images of at most ${limitBytes} bytes; upload this one with stripMetadata=false, or smaller`,
    value: limitBytes,
  });
}

/** An upload asked to have its metadata stripped is an image that cannot be read (damaged, truncated, too many pixels). */
export function imageNotStrippable(reason: string): ServiceError {
  return new ServiceError({
    name: 'UnprocessableEntityError',
    status: 422,
    messageKey: 'error.media.stripMetadataFailed',
    message: `The image's metadata cannot be stripped: ${reason}`,
  });
}

/** Turns anything thrown into the error a client may see. */
export function toServiceError(error: unknown, requestId?: string): ServiceError {
  return error instanceof ServiceError ? error : internalServerError(requestId);
}

/** Another request with this Idempotency-Key is still running (API additions, idempotent uploads). */
export function idempotencyInFlight(retryAfterSeconds = 1): ServiceError {
  return new ServiceError({
    name: 'ConflictError',
    status: 409,
    messageKey: 'error.media.idempotencyInFlight',
    message: 'A request with this Idempotency-Key is still running; retry it later',
    value: retryAfterSeconds,
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}

/** The Idempotency-Key was used for a different request (another route, options or content). */
export function idempotencyKeyReused(): ServiceError {
  return new ServiceError({
    name: 'UnprocessableEntityError',
    status: 422,
    messageKey: 'error.media.idempotencyKeyReused',
    message: 'This Idempotency-Key was used for a different request; use a new key for a new request',
  });
}

/** A disabled user signs in or acts: its sessions and keys stopped when it was disabled. */
export function userDisabled(): ServiceError {
  return new ServiceError({ name: 'ForbiddenError', status: 403, messageKey: 'error.user.disabled', message: 'The user is disabled' });
}

/** SIGN_UP_ENABLED=false: nobody may create a user through sign-up. */
export function signUpClosed(): ServiceError {
  return new ServiceError({ name: 'ForbiddenError', status: 403, messageKey: 'error.user.signUpClosed', message: 'Sign-up is closed on this service' });
}

/** An email address or username that another user has (compared case-insensitively). */
export function userTaken(field: 'email' | 'username'): ServiceError {
  return new ServiceError({
    name: 'ConflictError', status: 409, messageKey: `error.user.${field}Taken`, message: `The ${field} is already taken`, value: field,
  });
}

/** A username changed again before the cool-down ends; `retryAfterSeconds` until it may. */
export function usernameCooldown(retryAfterSeconds: number, allowedAt: Date): ServiceError {
  return new ServiceError({
    name: 'TooManyRequestsError', status: 429, messageKey: 'error.user.usernameCooldown',
    message: `The username was changed recently; it can be changed again from ${allowedAt.toISOString()}`,
    value: allowedAt.toISOString(), headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}

/** OAuth sign-in (docs/accounts.md): the state is unknown, used or expired. */
export function oauthStateInvalid(message = 'The sign-in state is unknown, already used or expired: start the sign-in again'): ServiceError {
  return new ServiceError({ name: 'BadRequestError', status: 400, messageKey: 'error.oauth.invalidState', message });
}

/** OAuth sign-in: the provider refused (access_denied, a bad code or verifier, an ID token that does not check out). */
export function oauthProviderRefused(code: string, message: string): ServiceError {
  return new ServiceError({ name: 'BadRequestError', status: 400, messageKey: 'error.oauth.providerRefused', message, value: code });
}

/** OAuth sign-in: the provider could not be reached (discovery, token or user endpoint). */
export function oauthProviderUnavailable(providerId: string): ServiceError {
  return new ServiceError({
    name: 'BadGatewayError', status: 502, messageKey: 'error.oauth.providerUnavailable', message: `The sign-in provider ${providerId} could not be reached`, value: providerId,
  });
}

/**
 * Linked accounts (spec 2.6): `linkedElsewhere` the provider account belongs to another user,
 * `providerLinked` the user already has an account of that provider, `emailTaken` another user has
 * the provider's address, `taken` a game account is someone else's, `lastSignIn` unlinking would
 * leave no way to sign in.
 */
export function accountConflict(reason: 'linkedElsewhere' | 'providerLinked' | 'emailTaken' | 'taken' | 'lastSignIn', message: string, value?: string): ServiceError {
  return new ServiceError({ name: 'ConflictError', status: 409, messageKey: `error.account.${reason}`, message, value });
}

/** Why a verification token (spec 2.7, email verification) is refused; nothing changes (docs/accounts.md). */
export type VerificationTokenRefusal = 'invalid' | 'expired' | 'used';

export function verificationTokenRefused(reason: VerificationTokenRefusal): ServiceError {
  switch (reason) {
    case 'invalid':
      return new ServiceError({ name: 'ForbiddenError', status: 403, messageKey: 'error.verification.tokenInvalid', message: 'The verification token is not valid' });
    case 'expired':
      return new ServiceError({ name: 'GoneError', status: 410, messageKey: 'error.verification.tokenExpired', message: 'The verification token has expired' });
    case 'used':
      return new ServiceError({ name: 'GoneError', status: 410, messageKey: 'error.verification.tokenUsed', message: 'The verification token has been used' });
  }
}

/** A deletion link that was altered or made for another file (403), or whose file is already deleted (410). */
export function deletionLinkRefused(reason: 'invalid' | 'gone'): ServiceError {
  return reason === 'invalid'
    ? new ServiceError({ name: 'ForbiddenError', status: 403, messageKey: 'error.media.deletionLinkInvalid', message: 'The deletion link is not valid' })
    : new ServiceError({ name: 'GoneError', status: 410, messageKey: 'error.media.deletionLinkGone', message: 'The file of this deletion link is already deleted' });
}

/** An account export link that was altered (403) or is past its hour (410). */
export function accountExportLinkRefused(reason: 'invalid' | 'expired'): ServiceError {
  return reason === 'invalid'
    ? new ServiceError({ name: 'ForbiddenError', status: 403, messageKey: 'error.accountExport.linkInvalid', message: 'The export link is not valid' })
    : new ServiceError({ name: 'GoneError', status: 410, messageKey: 'error.accountExport.linkExpired', message: 'The export link has expired' });
}

/** The team's portal (docs/workspace.md): a subdomain another team has (409), a second portal (409), or a subdomain changed again too soon (429). */
export function portalConflict(reason: 'subdomainTaken' | 'exists' | 'domainTaken'): ServiceError {
  const messages = {
    subdomainTaken: ['The subdomain is taken by another team\'s portal', 'subdomain'],
    exists: ['The team has a portal environment already: change it with PATCH', 'portal'],
    domainTaken: ['The domain is active for another team\'s portal', 'domain'],
  } as const;
  const [message, value] = messages[reason];
  return new ServiceError({ name: 'ConflictError', status: 409, messageKey: `error.portal.${reason}`, message, value });
}

export function portalSubdomainCooldown(retryAfterSeconds: number, allowedAt: Date): ServiceError {
  return new ServiceError({
    name: 'TooManyRequestsError', status: 429, messageKey: 'error.portal.subdomainChangeCooldown',
    message: `The subdomain was changed recently; it can be changed again from ${allowedAt.toISOString()}`,
    value: allowedAt.toISOString(), headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}
