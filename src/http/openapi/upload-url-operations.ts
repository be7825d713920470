import { z } from 'zod';
import { createUploadUrlSchema, UPLOAD_URL_MAX_SECONDS } from '../../uploads/upload-urls/upload-url.service.ts';
import { uploadOptionSchemas } from '../../uploads/options/upload-options.ts';
import { IDEMPOTENCY_ERRORS, idempotencyHeaders, replayableAnswerHeaders } from './idempotency-docs.ts';
import type { OperationDoc } from './operation-doc.ts';
import { uploadedMediaFileSchema } from './schemas.ts';

export const uploadUrlSchema = z
  .object({
    url: z.string().meta({ description: 'Where to POST the file: signed, usable once, without Authorization.' }),
    method: z.literal('POST'),
    fields: z.object({ name: z.literal('file').meta({ description: 'The form field to send the file in (multipart).' }) }),
    expiresAt: z.iso.datetime().meta({ description: 'When the URL stops working.' }),
    maxSizeBytes: z.int().meta({ description: 'The largest file the URL takes now: the smallest of the requested size, the plan\'s maxMediaFileSize and the route\'s limit.' }),
  })
  .meta({ id: 'UploadUrl', description: 'An upload URL for one file.' });

const fileBody = z.object({
  file: z.string().meta({
    format: 'binary',
    contentMediaType: 'application/octet-stream',
    description: 'The file; without a field named file, the first file of the form. Other fields are ignored.',
  }),
});
const rawBody = z.string().meta({ format: 'binary', description: 'The file itself, with its own Content-Type (checked against contentTypes before any byte).' });

/** The two upload URL routes: made with a team key, used with none. */
export function uploadUrlOperations(mediaBase: string): Record<string, OperationDoc> {
  return {
    [`POST ${mediaBase}/upload-urls`]: {
      operationId: 'createUploadUrl',
      summary: 'Create an upload URL (one file, no key needed to use it)',
      description: 'Needs `team.media.upload`; a key with scope media:upload may call it. The options fixed here win over anything '
        + `the uploader sends. The URL expires after expiresInSeconds (at most ${UPLOAD_URL_MAX_SECONDS}).`,
      tag: 'media',
      access: 'teamApiKey',
      headers: idempotencyHeaders,
      body: createUploadUrlSchema,
      responses: {
        201: { description: 'Created (or, with Idempotent-Replayed, the URL the first request with this Idempotency-Key created).', schema: uploadUrlSchema, headers: replayableAnswerHeaders },
      },
      errors: {
        400: 'The body is not valid JSON, or an option is invalid as the upload routes judge it (the Error names it in `value`), or the Idempotency-Key is invalid.',
        404: 'folderId names no folder of the team.',
        409: IDEMPOTENCY_ERRORS[409],
        413: 'The body is larger than MAX_JSON_BODY_BYTES.',
        415: 'fileName is of a blocked type (HTML, JavaScript, executables, shell scripts, SVG): no use could store it.',
        422: `${IDEMPOTENCY_ERRORS[422].slice(0, -1)}: another body.`,
      },
      retryAfterOn: [409],
    },
    [`POST ${mediaBase}/upload-urls/:urlId`]: {
      operationId: 'uploadToUrl',
      summary: 'Upload one file to an upload URL (no Authorization)',
      description: 'The `url` of createUploadUrl, as given. Multipart (field `file`) or the raw file as the body. '
        + 'Works once: a second use answers 410 (409 while the first still runs); a failed upload leaves the URL usable. '
        + 'Rate-limited per URL and per team (UPLOAD_URL_RATE_LIMIT_POINTS, UPLOAD_URL_TEAM_RATE_LIMIT_POINTS).',
      tag: 'media',
      access: 'public',
      query: z.object({
        expires: z.string().meta({ description: 'Part of the signed URL.' }),
        signature: z.string().meta({ description: 'Part of the signed URL.' }),
        fileName: uploadOptionSchemas.fileName.optional().meta({ description: 'The file\'s name when the URL fixes none (a raw body needs one, here or in the URL).' }),
      }),
      headers: idempotencyHeaders,
      bodyContent: { 'multipart/form-data': fileBody, '*/*': rawBody },
      bodyRequired: true,
      responses: {
        201: { description: 'Stored (or, with Idempotent-Replayed, stored by the first use with this Idempotency-Key: a retry after a lost answer).', schema: uploadedMediaFileSchema, headers: replayableAnswerHeaders },
      },
      errors: {
        400: 'Malformed body, invalid fileName, no file, a raw body without a file name, or an invalid Idempotency-Key.',
        402: 'Plan limit: file larger than maxMediaFileSize, or the team storage (maxTeamStorage) is full.',
        403: 'The URL is altered or malformed (messageKey error.media.uploadUrlInvalid), or the key or session that made it can no longer upload to the team: it lost team.media.upload, its member was removed or left, the key was rerolled or deleted, or the session ended (error.media.uploadUrlRevoked); or the team is archived (error.team.archived).',
        404: 'The folder the URL names was deleted.',
        408: 'The body stopped arriving for UPLOAD_IDLE_TIMEOUT_SECONDS.',
        409: 'An upload to this URL is running (messageKey error.media.uploadUrlInUse), or a request with the same Idempotency-Key (error.media.idempotencyInFlight).',
        410: 'The URL has expired (error.media.uploadUrlExpired) or was used (error.media.uploadUrlUsed; with the Idempotency-Key of the use that stored it, that use\'s answer is replayed instead).',
        413: 'The file is larger than the URL\'s maxSizeBytes, or the body than the route allows; or an image to strip is above STRIP_METADATA_MAX_MIB (error.media.stripMetadataTooLarge).',
        415: 'The file\'s type is not among the URL\'s contentTypes, or is blocked (HTML, JavaScript, executables, shell scripts, SVG).',
        422: `${IDEMPOTENCY_ERRORS[422].slice(0, -1)}: another URL or content; or an image to strip cannot be read (error.media.stripMetadataFailed).`,
        429: 'Too many uses of this URL or of the team\'s upload URLs, or too many altered URLs from this address; retry after Retry-After.',
        503: 'Upload capacity busy (messageKey error.media.uploadBusy; retry after Retry-After), or storage unavailable.',
      },
    },
  };
}
