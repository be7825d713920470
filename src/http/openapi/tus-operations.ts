import { z } from 'zod';
import { TUS_EXTENSIONS } from '../routes/media/tus-routes.ts';
import { IDEMPOTENCY_ERRORS, idempotencyHeaders, replayedHeader } from './idempotency-docs.ts';
import type { OperationDoc } from './operation-doc.ts';

/**
 * The tus 1.0.0 routes (resumable uploads). tus speaks in headers: requests carry Tus-Resumable,
 * Upload-Length, Upload-Offset and Upload-Metadata, answers carry the upload's state, so these
 * entries describe headers more than bodies. Errors use the API's Error body.
 */

const base = '/v1/cdn/media/:teamId/tus';
const upload = `${base}/:uploadId`;

const header = (description: string) => z.string().meta({ description });
const integerHeader = (description: string) => z.int().min(0).meta({ description });

const tusResumable = header('The protocol version: `1.0.0`. 412 with Tus-Version when missing or different.');
const rateLimit = {
  'RateLimit-Limit': z.int().meta({ description: 'Requests allowed per window for this key.' }),
  'RateLimit-Remaining': z.int().meta({ description: 'Requests left in the current window.' }),
  'RateLimit-Reset': z.int().meta({ description: 'Seconds until the window resets.' }),
};
const uploadExpires = header('When the unfinished upload expires (HTTP date); each PATCH moves it TUS_EXPIRY_SECONDS ahead.');
const mediaId = z.uuid().meta({ description: 'The media file the upload became (only once complete).' });
const octetStream = z.string().meta({ format: 'binary', contentMediaType: 'application/offset+octet-stream' });

const ACCESS = 'Needs `team.media.upload`; a key with scope media:upload may call it.';

const TUS_ERRORS = {
  412: 'Tus-Resumable is missing or not 1.0.0 (the answer names Tus-Version).',
  503: 'Upload capacity busy (messageKey error.media.uploadBusy), or storage unavailable.',
};

export const tusOperations: Record<string, OperationDoc> = {
  [`OPTIONS ${base}`]: {
    operationId: 'tusDiscover',
    summary: 'tus: what the server speaks',
    description: 'tus discovery; needs no key. An OPTIONS with Origin and Access-Control-Request-Method is a CORS preflight instead.',
    tag: 'media',
    access: 'public',
    responses: {
      204: {
        description: 'The tus versions, extensions and the largest Upload-Length.',
        headers: z.object({
          'Tus-Resumable': tusResumable,
          'Tus-Version': header('Versions spoken: `1.0.0`.'),
          'Tus-Extension': header(`Extensions: \`${TUS_EXTENSIONS}\`.`),
          'Tus-Max-Size': integerHeader('The largest Upload-Length accepted, in bytes.'),
        }),
      },
    },
    errors: {},
  },
  [`POST ${base}`]: {
    operationId: 'tusCreate',
    summary: 'tus: create a resumable upload (creation, creation-with-upload)',
    description:
      `${ACCESS} Upload-Length is reserved against the team's storage at once. Upload-Metadata keys: \`filename\` (required), ` +
      '`filetype`, `folder`, `folderId`, `tags` (comma list), `public`, `stripMetadata`, each base64 as tus has it, validated like the upload options. ' +
      'A body (Content-Type application/offset+octet-stream) is the first bytes of the file. With an Idempotency-Key, a retry with the same ' +
      'Upload-Length and Upload-Metadata answers the first creation again (its Location, Upload-Expires, Upload-Offset; Idempotent-Replayed: true) ' +
      'and creates nothing; the bytes of a creation-with-upload are not compared and a retry\'s are not stored: continue from the answered Upload-Offset.',
    tag: 'media',
    access: 'teamApiKey',
    headers: idempotencyHeaders.extend({
      'Tus-Resumable': tusResumable,
      'Upload-Length': integerHeader('The file size in bytes.'),
      'Upload-Metadata': header('Comma-separated `key base64value` pairs; `filename` is required.'),
      'Content-Type': header('application/offset+octet-stream when the request carries the first bytes.').optional(),
    }),
    bodyContent: { 'application/offset+octet-stream': octetStream },
    responses: {
      201: {
        description: 'Created; Location is the upload URL. With a body, Upload-Offset says how much of it was stored. With Upload-Length 0 the empty file is complete at once: Upload-Offset 0 and Media-Id.',
        headers: z.object({
          Location: header('The upload URL (a path), for HEAD, PATCH and DELETE.'),
          'Tus-Resumable': tusResumable,
          'Upload-Expires': uploadExpires,
          'Upload-Offset': integerHeader('With a body, or for an empty file: bytes stored.').optional(),
          'Media-Id': mediaId.optional(),
          'Idempotent-Replayed': replayedHeader.optional(),
          ...rateLimit,
        }),
      },
    },
    errors: {
      ...TUS_ERRORS,
      400: 'Upload-Length missing or invalid, Upload-Metadata invalid or without filename, an invalid option or Idempotency-Key; Upload-Defer-Length and Upload-Concat are not supported.',
      402: 'Plan limit: Upload-Length above maxMediaFileSize, or more than the team has free (maxTeamStorage).',
      404: 'folderId names no folder of the team.',
      409: IDEMPOTENCY_ERRORS[409],
      413: 'Upload-Length above Tus-Max-Size.',
      415: 'Blocked file name or filetype, or a body that is not application/offset+octet-stream.',
      422: `${IDEMPOTENCY_ERRORS[422].slice(0, -1)}: another Upload-Length or Upload-Metadata.`,
    },
    retryAfterOn: [409],
  },
  [`HEAD ${upload}`]: {
    operationId: 'tusStatus',
    summary: 'tus: where an upload stands',
    description: `${ACCESS} Answers the offset to resume from; once complete, the Media-Id.`,
    tag: 'media',
    access: 'teamApiKey',
    headers: z.object({ 'Tus-Resumable': tusResumable }),
    responses: {
      200: {
        description: 'The upload\'s state (no body).',
        headers: z.object({
          'Tus-Resumable': tusResumable,
          'Upload-Offset': integerHeader('Bytes stored.'),
          'Upload-Length': integerHeader('The file size.'),
          'Upload-Metadata': header('As sent at creation.').optional(),
          'Upload-Expires': uploadExpires.optional(),
          'Media-Id': mediaId.optional(),
          'Cache-Control': header('`no-store`.'),
          ...rateLimit,
        }),
      },
    },
    errors: {
      ...TUS_ERRORS,
      402: 'All bytes were stored but the file no longer fits the team\'s limits: the upload is removed.',
      403: 'The key lacks the permission or scope (error.forbidden), or all bytes were stored but the key or session that created the upload can no longer upload to the team (error.tus.uploadRevoked: the upload is terminated).',
      404: 'No such upload of the team (terminated or expired).',
      423: 'A request is completing this upload; retry.',
    },
  },
  [`PATCH ${upload}`]: {
    operationId: 'tusAppend',
    summary: 'tus: append bytes at Upload-Offset',
    description:
      `${ACCESS} The bytes that arrive are kept even when the connection breaks; HEAD says where to resume. The last byte makes the upload ` +
      'a media file (Media-Id). The first bytes are checked for blocked types (415, and the upload is terminated).',
    tag: 'media',
    access: 'teamApiKey',
    headers: z.object({
      'Tus-Resumable': tusResumable,
      'Upload-Offset': integerHeader('Where these bytes start: the offset HEAD answered.'),
      'Content-Type': header('application/offset+octet-stream.'),
    }),
    bodyContent: { 'application/offset+octet-stream': octetStream },
    bodyRequired: true,
    responses: {
      204: {
        description: 'Stored; Upload-Offset is the new offset.',
        headers: z.object({
          'Tus-Resumable': tusResumable,
          'Upload-Offset': integerHeader('Bytes stored.'),
          'Upload-Expires': uploadExpires.optional(),
          'Media-Id': mediaId.optional(),
          ...rateLimit,
        }),
      },
    },
    errors: {
      ...TUS_ERRORS,
      400: 'Upload-Offset missing or invalid.',
      402: 'The team\'s limits were lowered below the file before it completed.',
      403: 'The key lacks the permission or scope (error.forbidden); the upload is complete and takes no more bytes (error.tus.uploadComplete); or the key or session that created the upload can no longer upload to the team (error.tus.uploadRevoked: the upload is terminated).',
      404: 'No such upload of the team (terminated or expired), or its folder is gone.',
      409: 'Upload-Offset is not the upload\'s offset (messageKey error.tus.offsetConflict).',
      413: 'The bytes go past Upload-Length; or, on the last PATCH, stripMetadata was asked for an image above STRIP_METADATA_MAX_MIB (error.media.stripMetadataTooLarge: the upload is removed).',
      415: 'Content-Type is not application/offset+octet-stream, or the content is a blocked type.',
      422: 'On the last PATCH: stripMetadata was asked for a JPEG, PNG or WebP that cannot be read (error.media.stripMetadataFailed: the upload is removed).',
      423: 'Another request is appending to this upload (messageKey error.tus.locked); retry.',
    },
  },
  [`DELETE ${upload}`]: {
    operationId: 'tusTerminate',
    summary: 'tus: terminate an upload',
    description: `${ACCESS} Removes the stored bytes and gives the reserved storage back.`,
    tag: 'media',
    access: 'teamApiKey',
    headers: z.object({ 'Tus-Resumable': tusResumable }),
    responses: { 204: { description: 'Terminated.', headers: z.object({ 'Tus-Resumable': tusResumable, ...rateLimit }) } },
    errors: {
      ...TUS_ERRORS,
      404: 'No such upload of the team.',
      409: 'The upload is complete: delete its media file instead.',
      423: 'A PATCH is appending to this upload.',
    },
  },
};
