import { z } from 'zod';
import { createSchema as folderCreateSchema, updateSchema as folderUpdateSchema } from '../../domain/folders/folder.service.ts';
import { DEFAULT_TAG_LIMIT, DEFAULT_USAGE_DAYS, MAX_TAG_LIMIT, MAX_TAG_SEARCH_LENGTH, MAX_USAGE_DAYS } from '../../domain/media/library-limits.ts';
import { bulkSchema, updateSchema as mediaUpdateSchema } from '../../domain/media/media-edit.service.ts';
import { MAX_SEARCH_LENGTH, MEDIA_TYPES } from '../../domain/media/media.service.ts';
import { DEFAULT_PREVIEW_LINES, MAX_PREVIEW_LINES, PREVIEW_FROM } from '../../domain/media/text-preview.ts';
import {
  DEFAULT_TRANSFORM_QUALITY, MAX_TRANSFORM_SIDE, TRANSFORM_FITS, TRANSFORM_FORMATS, TRANSFORM_QUALITIES, TRANSFORM_SIDES,
} from '../../domain/media/image-transform-params.ts';
import { uploadOptionSchemas } from '../../uploads/options/upload-options.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';
import { idempotencyHeaders, replayedHeader } from './idempotency-docs.ts';
import { binary, paging, rateLimitHeaders, teamRoute, text, type OperationDoc } from './operation-doc.ts';
import {
  bulkResultSchema, folderDeletionSchema, folderListSchema, folderSchema, mediaDeletionSchema, mediaFileSchema, mediaLinkSchema, mediaListSchema,
  tagListSchema, textPreviewSchema, uploadedMediaFileSchema, usageSchema,
} from './schemas.ts';

/** Media files, their folders, tags and usage, deletion links and the files themselves (src/http/routes/media/). */

const uploadAnswerHeaders = rateLimitHeaders.extend({ 'Idempotent-Replayed': replayedHeader.optional() });

const deletionUrlQuery = z.boolean().optional().meta({
  description: 'true: the answer carries `deletionUrl`, a link that deletes this file without a key (ShareX\'s DeletionURL). Default false.',
});

const uploadQuery = z.object({
  public: uploadOptionSchemas.public.optional().meta({ description: 'Visibility; default true, or the target folder\'s defaultPublic.' }),
  fileName: uploadOptionSchemas.fileName.optional().meta({ description: 'Stored file name; default the uploaded file\'s name.' }),
  folder: uploadOptionSchemas.folder.optional(),
  folderId: uploadOptionSchemas.folderId.optional(),
  tags: uploadOptionSchemas.tagList.optional(),
  stripMetadata: uploadOptionSchemas.stripMetadata.optional(),
  deletionUrl: deletionUrlQuery,
});

const multipartUpload = z.object({
  file: z.string().meta({
    format: 'binary',
    contentMediaType: 'application/octet-stream',
    description: 'The file; without a field named file, the first file of the form.',
  }),
});

const jsonUpload = z
  .object({
    file: z.string().meta({ description: 'The content as a data URI (data:<type>;base64,...) or plain base64.' }),
    fileName: uploadOptionSchemas.fileName,
    public: uploadOptionSchemas.public.optional().meta({ description: 'Visibility; default false, or the target folder\'s defaultPublic.' }),
    folder: uploadOptionSchemas.folder.optional(),
    folderId: uploadOptionSchemas.folderId.optional(),
    tags: z.union([z.array(uploadOptionSchemas.tag).max(20), uploadOptionSchemas.tagList]).optional(),
    stripMetadata: uploadOptionSchemas.stripMetadata.optional(),
  })
  .meta({ id: 'JsonUploadRequest', description: 'Other members are ignored.' });

const side = (which: string) => z.literal(TRANSFORM_SIDES as number[]).optional().meta({
  description: `Resized images: the ${which} in pixels, one of the listed values; the image is never enlarged.`,
});

/** The transform parameters (src/domain/media/image-transform-params.ts); any one of them asks for a resized image. */
const transformQuery = {
  w: side('width'),
  h: side('height'),
  fit: z.enum(TRANSFORM_FITS).optional().meta({
    description: 'Resized images, with both w and h: cover crops to the box, contain letterboxes into it (transparent; white for JPEG), '
      + 'inside (the default) fits within it. With one side the aspect ratio is kept whatever the fit.',
  }),
  format: z.enum(TRANSFORM_FORMATS).optional().meta({
    description: 'Resized images: the output format; default the file\'s own (a GIF\'s first frame becomes a PNG). No negotiation by Accept.',
  }),
  q: z.literal(TRANSFORM_QUALITIES as number[]).optional().meta({
    description: `Resized images: the quality of WebP, AVIF and JPEG output (default ${DEFAULT_TRANSFORM_QUALITY}); PNG is lossless and ignores it.`,
  }),
};

const TRANSFORM_DESCRIPTION =
  ' Any of w, h, fit, format, q answers the image resized (PNG, JPEG, WebP, GIF and AVIF files): at most '
  + `${MAX_TRANSFORM_SIDE} pixels a side, upright by its EXIF orientation, without metadata, made once and cached, `
  + 'with an ETag of its own. A private file\'s resized image needs a link signed with its parameters (getMediaLink with the same parameters); '
  + 'the signature of the file itself does not pass, nor that of other parameters.';

/** The media update body: the service's schema, with the two fields it parses by hand shown as it parses them. */
const mediaUpdateBody = mediaUpdateSchema
  .extend({
    fileName: uploadOptionSchemas.fileName.optional(),
    tags: z.array(uploadOptionSchemas.tag).max(20).optional().meta({ description: 'Replaces all tags.' }),
  })
  .meta({ id: 'MediaUpdateRequest', description: 'Every field optional; `{}` answers the file unchanged. folderId null takes the file out of its folder.' });

const UPLOAD_ERRORS = {
  400: 'Invalid option, tag, folder or body; folder together with folderId; no file.',
  402: 'Plan limit: file larger than maxMediaFileSize, or the team storage (maxTeamStorage) is full.',
  404: 'folderId names no folder of the team.',
  408: 'The body stopped arriving for UPLOAD_IDLE_TIMEOUT_SECONDS.',
  413: 'The body is larger than the route allows; or stripMetadata was asked for an image above STRIP_METADATA_MAX_MIB (messageKey error.media.stripMetadataTooLarge).',
  415: 'Blocked file type: HTML, JavaScript, executables, shell scripts, SVG.',
  409: 'A request with the same Idempotency-Key is still running (messageKey error.media.idempotencyInFlight; retry after Retry-After).',
  422: 'The Idempotency-Key was used for a different request: another route, options or content (messageKey error.media.idempotencyKeyReused); '
    + 'or stripMetadata was asked for a JPEG, PNG or WebP that cannot be read (messageKey error.media.stripMetadataFailed).',
  503: 'Upload capacity busy (messageKey error.media.uploadBusy; retry after Retry-After), or storage unavailable.',
};

export const mediaBase = '/v1/cdn/media/:teamId';

/** The deletion link of one file (asked for with deletionUrl=true on an upload): no key, its signature is the access. */
function deletionLinkOperations(): Record<string, OperationDoc> {
  const pattern = `${mediaBase}/deletion-links/:mediaId`;
  const query = z.object({ signature: z.string().meta({ description: 'Part of the deletion link.' }) });
  const refusals = {
    403: 'The link is altered, or made for another file (messageKey error.media.deletionLinkInvalid).',
    410: 'The file is already deleted: by this link before, or otherwise (messageKey error.media.deletionLinkGone).',
  };
  const deleted = { 200: { description: 'Deleted; its storage is freed.', schema: mediaDeletionSchema } };
  return {
    [`GET ${pattern}`]: {
      operationId: 'confirmDeletionLink',
      summary: 'A page asking to delete the file (deletes nothing)',
      description: 'The `deletionUrl` of an upload answer, opened in a browser: a small HTML page with the file\'s name and a Delete button, '
        + 'a form that POSTs to the same link. A link preview or a crawler fetching the link deletes nothing. The links do not expire; '
        + 'changing AUTH_SECRET voids them all.',
      tag: 'media',
      access: 'public',
      query,
      responses: { 200: { description: 'The confirmation page.', content: { 'text/html': text('HTML') } } },
      errors: refusals,
    },
    [`POST ${pattern}`]: {
      operationId: 'useDeletionLinkForm',
      summary: 'Delete the file (the confirmation page\'s form)',
      description: 'Deletes the file, as DELETE does. With `Accept: text/html` (a browser\'s form) the answer is a page saying so; otherwise the JSON of DELETE.',
      tag: 'media',
      access: 'public',
      query,
      responses: { 200: { description: 'Deleted; its storage is freed.', schema: mediaDeletionSchema, content: { 'text/html': text('HTML') } } },
      errors: refusals,
    },
    [`DELETE ${pattern}`]: {
      operationId: 'useDeletionLink',
      summary: 'Delete the file of a deletion link',
      description: 'Deletes the one file the link was made for and frees its storage, once: a second use answers 410.',
      tag: 'media',
      access: 'public',
      query,
      responses: deleted,
      errors: refusals,
    },
  };
}

export const mediaOperations: Record<string, OperationDoc> = {
  [`POST ${mediaBase}/upload/file`]: {
    operationId: 'uploadMediaMultipart',
    summary: 'Upload a file (multipart/form-data)',
    description: `${teamRoute('team.media.upload')} A key with scope media:upload may call it. Options are query parameters; a file is public unless told otherwise.`,
    tag: 'media',
    access: 'teamApiKey',
    query: uploadQuery,
    headers: idempotencyHeaders,
    bodyContent: { 'multipart/form-data': multipartUpload },
    bodyRequired: true,
    responses: { 201: { description: 'Stored (or, with Idempotent-Replayed, stored by the first request with this Idempotency-Key).', schema: uploadedMediaFileSchema, headers: uploadAnswerHeaders } },
    errors: UPLOAD_ERRORS,
    retryAfterOn: [409],
  },
  [`POST ${mediaBase}/upload`]: {
    operationId: 'uploadMediaJson',
    summary: 'Upload a file (JSON with a data URI)',
    description: `${teamRoute('team.media.upload')} A key with scope media:upload may call it. A file is private unless told otherwise; above about 100 MB use multipart.`,
    tag: 'media',
    access: 'teamApiKey',
    query: z.object({ deletionUrl: deletionUrlQuery }),
    headers: idempotencyHeaders,
    bodyContent: { 'application/json': jsonUpload },
    bodyRequired: true,
    responses: { 201: { description: 'Stored (or, with Idempotent-Replayed, stored by the first request with this Idempotency-Key).', schema: uploadedMediaFileSchema, headers: uploadAnswerHeaders } },
    errors: UPLOAD_ERRORS,
    retryAfterOn: [409],
  },
  [`GET ${mediaBase}`]: {
    operationId: 'listMedia',
    summary: 'List, filter and search files',
    description: `${teamRoute('team.media.view')} Newest first; paged by the pageNumber and pageSize headers.`,
    tag: 'media',
    access: 'teamApiKey',
    query: z.object({
      folderId: z.union([z.uuid(), z.literal('none')]).optional().meta({ description: 'A folder id, or `none` for files in no folder.' }),
      includeSubfolders: z.boolean().optional().meta({ description: 'With folderId: files of its subfolders too.' }),
      tags: uploadOptionSchemas.tagList.optional().meta({ description: 'Comma-separated; a file must carry all of them.' }),
      search: z.string().max(MAX_SEARCH_LENGTH).optional().meta({ description: 'Case-insensitive part of the file name.' }),
      type: z.enum(MEDIA_TYPES).optional(),
    }),
    headers: paging,
    responses: { 200: { description: 'One page of files.', schema: mediaListSchema } },
    errors: { 400: 'Invalid filter or paging header.', 404: 'folderId names no folder of the team.' },
  },
  [`GET ${mediaBase}/:mediaId`]: {
    operationId: 'getMediaLink',
    summary: 'Get a link to a file',
    description: `${teamRoute('team.media.view')} The public link of a public file; a link signed for one hour for a private one. `
      + 'With any of w, h, fit, format, q: the link of the image resized so (getFile), its parameters in one spelling, and for a private file '
      + 'signed with them. uploadedBy names the API key that uploaded the file (null for a signed-in member or a deleted key).',
    tag: 'media',
    access: 'teamApiKey',
    query: z.object(transformQuery),
    responses: { 200: { description: 'The link.', schema: mediaLinkSchema } },
    errors: { 400: 'A transform parameter off its list, or given twice; transform parameters for a file that is not an image.', 404: 'No such file in the team.' },
  },
  [`GET ${mediaBase}/preview/:mediaId`]: {
    operationId: 'previewTextMedia',
    summary: 'The first or last lines of a text file',
    description: `${teamRoute('team.media.view')} For text files (stored as text/*, application/json or application/x-ndjson) and gzipped `
      + 'text files (gzip named like `x.log.gz`, `x.txt.gz`, `x.log.3.gz`). The file is read in ranges, never whole: at most 256 KiB '
      + 'from storage (gzip from=end: up to 8 MiB decompressed, from the file\'s start), so a large file costs no more than a small one. '
      + 'Lines are decoded as UTF-8 (invalid bytes become U+FFFD), at most 4096 characters each and 256 Ki characters in all.',
    tag: 'media',
    access: 'teamApiKey',
    query: z.object({
      lines: z.int().min(1).max(MAX_PREVIEW_LINES).default(DEFAULT_PREVIEW_LINES).optional().meta({ description: 'How many lines.' }),
      from: z.enum(PREVIEW_FROM).default('end').optional().meta({ description: 'end: the last lines (a log\'s newest); start: the first.' }),
    }),
    responses: { 200: { description: 'The lines.', schema: textPreviewSchema } },
    errors: {
      400: 'lines is not a whole number from 1 to 1000, or from is not start or end.',
      404: 'No such file in the team.',
      415: 'The file is not text (an image, a zip, a gzip not named as gzipped text, ...): the Error\'s value is its content type.',
    },
  },
  [`PATCH ${mediaBase}/update/:mediaId`]: {
    operationId: 'updateMedia',
    summary: 'Change a file\'s name, visibility, folder or tags',
    description: teamRoute('team.media.edit'),
    tag: 'media',
    access: 'teamApiKey',
    body: mediaUpdateBody,
    responses: { 200: { description: 'The file as it is now.', schema: mediaFileSchema } },
    errors: {
      ...JSON_BODY_ERRORS,
      404: 'No such file, or folderId names no folder of the team.',
      415: 'The new fileName has a blocked file type (the same list as uploads); nothing changed.',
    },
  },
  [`DELETE ${mediaBase}/delete/:mediaId`]: {
    operationId: 'deleteMedia',
    summary: 'Delete a file',
    description: `${teamRoute('team.media.delete')} Frees its storage at once and purges its link from the CDN (when CDN_PURGE_URL is set).`,
    tag: 'media',
    access: 'teamApiKey',
    responses: { 200: { description: 'Deleted.', schema: mediaDeletionSchema } },
    errors: { 404: 'No such file in the team.' },
  },
  ...deletionLinkOperations(),
  [`POST ${mediaBase}/bulk`]: {
    operationId: 'bulkMedia',
    summary: 'One action on up to 100 files',
    description: 'delete needs `team.media.delete`; move, setPublic, addTags and removeTags need `team.media.edit`.',
    tag: 'media',
    access: 'teamApiKey',
    body: bulkSchema.meta({ id: 'BulkRequest' }),
    bodyRequired: true,
    responses: { 200: { description: 'Done; files that could not be processed are in failed.', schema: bulkResultSchema } },
    errors: { ...JSON_BODY_ERRORS, 404: 'move: folderId names no folder of the team.' },
  },
  [`GET ${mediaBase}/folders`]: {
    operationId: 'listFolders',
    summary: 'List folders',
    description: teamRoute('team.media.view'),
    tag: 'folders',
    access: 'teamApiKey',
    responses: { 200: { description: 'Every folder of the team.', schema: folderListSchema } },
    errors: {},
  },
  [`POST ${mediaBase}/folders`]: {
    operationId: 'createFolder',
    summary: 'Create a folder',
    description: `${teamRoute('team.media.edit')} Nesting is at most 5 levels; names are unique among siblings.`,
    tag: 'folders',
    access: 'teamApiKey',
    body: folderCreateSchema.meta({ id: 'FolderCreateRequest' }),
    bodyRequired: true,
    responses: { 201: { description: 'Created.', schema: folderSchema } },
    errors: { ...JSON_BODY_ERRORS, 404: 'parentId names no folder of the team.', 409: 'The name is taken in the parent folder.' },
  },
  [`PATCH ${mediaBase}/folders/:folderId`]: {
    operationId: 'updateFolder',
    summary: 'Rename, move or change the rules of a folder',
    description: teamRoute('team.media.edit'),
    tag: 'folders',
    access: 'teamApiKey',
    body: folderUpdateSchema.meta({ id: 'FolderUpdateRequest' }),
    bodyRequired: true,
    responses: { 200: { description: 'The folder as it is now.', schema: folderSchema } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such folder (or parent) in the team.', 409: 'The name is taken in the parent folder.' },
  },
  [`DELETE ${mediaBase}/folders/:folderId`]: {
    operationId: 'deleteFolder',
    summary: 'Delete a folder',
    description: `${teamRoute('team.media.edit')} Its files and subfolders move to its parent.`,
    tag: 'folders',
    access: 'teamApiKey',
    responses: { 200: { description: 'Deleted.', schema: folderDeletionSchema } },
    errors: { 404: 'No such folder in the team.', 409: 'A subfolder has the name of a folder in the parent.' },
  },
  [`GET ${mediaBase}/tags`]: {
    operationId: 'listTags',
    summary: 'Tags in use, with counts',
    description: teamRoute('team.media.view'),
    tag: 'library',
    access: 'teamApiKey',
    query: z.object({
      search: z.string().max(MAX_TAG_SEARCH_LENGTH).optional().meta({ description: 'Part of the tag; tags starting with it come first.' }),
      limit: z.int().min(1).max(MAX_TAG_LIMIT).default(DEFAULT_TAG_LIMIT).optional(),
    }),
    responses: { 200: { description: 'The tags.', schema: tagListSchema } },
    errors: { 400: 'Invalid limit or search.' },
  },
  [`GET ${mediaBase}/usage`]: {
    operationId: 'getUsage',
    summary: 'Storage, limits and daily usage',
    description: teamRoute('team.media.view'),
    tag: 'library',
    access: 'teamApiKey',
    query: z.object({ days: z.int().min(1).max(MAX_USAGE_DAYS).default(DEFAULT_USAGE_DAYS).optional() }),
    responses: { 200: { description: 'Usage of the last `days` UTC days.', schema: usageSchema } },
    errors: { 400: 'Invalid days.', 404: 'The team does not exist.' },
  },
};

export const fileOperations: Record<string, OperationDoc> = {
  'GET /media/team/:teamId/:file': {
    operationId: 'getFile',
    summary: 'The file itself',
    description:
      'No key: a public file to anyone; a private one only with a valid signed link (expires and signature from getMediaLink). ' +
      'Byte ranges and If-None-Match are honoured. Public links may point at CDN_URL, which pulls from here.' + TRANSFORM_DESCRIPTION
      + ' Ranges do not apply to resized images.',
    tag: 'files',
    access: 'public',
    query: z.object({
      expires: z.string().optional().meta({ description: 'Signed links: Unix time the link expires.' }),
      signature: z.string().optional().meta({ description: 'Signed links: the signature.' }),
      ...transformQuery,
    }),
    headers: z.object({
      Range: z.string().optional().meta({ description: 'One byte range, e.g. bytes=0-1023.' }),
      'If-None-Match': z.string().optional(),
    }),
    responses: {
      200: { description: 'The file, with its own Content-Type; or the resized image, with the output\'s.', content: { '*/*': binary() } },
      206: { description: 'The requested range.', content: { '*/*': binary() } },
      304: { description: 'Not modified (If-None-Match matched the ETag).' },
      416: { description: 'The range is outside the file.' },
    },
    errors: {
      400: 'Resized images: a parameter off its list or given twice, a file that is not an image, or an image too large or not decodable.',
      403: 'The signed link is invalid or expired, or signed for other transform parameters.',
      404: 'No such file, or a private file without a signature.',
      503: 'Resized images: too many being made on this instance; retry after Retry-After seconds.',
    },
  },
  'HEAD /media/team/:teamId/:file': {
    operationId: 'headFile',
    summary: 'The file\'s headers only',
    description: 'As getFile without the body; with transform parameters the resized image is made (or found cached) to announce its length.',
    tag: 'files',
    access: 'public',
    query: z.object({ expires: z.string().optional(), signature: z.string().optional(), ...transformQuery }),
    responses: {
      200: { description: 'Headers of the whole file.' },
      206: { description: 'Headers of the range.' },
      304: { description: 'Not modified.' },
      416: { description: 'The range is outside the file.' },
    },
    errors: {
      400: 'Resized images: a parameter off its list, a file that is not an image, or an image too large or not decodable.',
      403: 'The signed link is invalid or expired, or signed for other transform parameters.',
      404: 'No such file, or a private file without a signature.',
      503: 'Resized images: too many being made on this instance.',
    },
  },
  'GET /media/team/:teamId/thumbnails/:file': {
    operationId: 'getThumbnail',
    summary: 'A media file\'s thumbnail',
    description:
      'A WebP of at most THUMBNAIL_SIZE pixels (320 by default) on its long side, made after the upload of a PNG, JPEG, WebP, GIF or AVIF image. ' +
      'The link is the media record\'s `thumbnailUrl`, under the file\'s own rules: public to anyone (and through CDN_URL), private only signed. ' +
      '`:file` is `<mediaId>.webp`.',
    tag: 'files',
    access: 'public',
    query: z.object({
      expires: z.string().optional().meta({ description: 'Signed links: Unix time the link expires.' }),
      signature: z.string().optional().meta({ description: 'Signed links: the signature.' }),
    }),
    headers: z.object({ 'If-None-Match': z.string().optional() }),
    responses: {
      200: { description: 'The thumbnail.', content: { 'image/webp': binary() } },
      304: { description: 'Not modified (If-None-Match matched the ETag).' },
    },
    errors: {
      403: 'The signed link is invalid or expired.',
      404: 'No such file, no thumbnail (yet, or none can be made), or a private file without a signature.',
    },
  },
  'HEAD /media/team/:teamId/thumbnails/:file': {
    operationId: 'headThumbnail',
    summary: 'The thumbnail\'s headers only',
    tag: 'files',
    access: 'public',
    query: z.object({ expires: z.string().optional(), signature: z.string().optional() }),
    responses: { 200: { description: 'Headers of the thumbnail.' }, 304: { description: 'Not modified.' } },
    errors: { 403: 'The signed link is invalid or expired.', 404: 'No such thumbnail, or a private file without a signature.' },
  },
};
