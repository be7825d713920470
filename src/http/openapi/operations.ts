import { z } from 'zod';
import { createApiKeySchema } from '../../domain/api-keys/api-key.service.ts';
import { createSchema as automationCreateSchema, updateSchema as automationUpdateSchema } from '../../domain/automations/automation.service.ts';
import { DELIVERY_STATUSES } from '../../domain/automations/automation.entity.ts';
import { createSchema as folderCreateSchema, updateSchema as folderUpdateSchema } from '../../domain/folders/folder.service.ts';
import { bulkSchema, updateSchema as mediaUpdateSchema } from '../../domain/media/media-edit.service.ts';
import { MAX_SEARCH_LENGTH, MEDIA_TYPES } from '../../domain/media/media.service.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../domain/paging.ts';
import { addToGroupSchema, createGroupSchema, createMemberSchema } from '../../domain/members/member.service.ts';
import { limitsPatchSchema } from '../../domain/teams/team-limits.ts';
import { createTeamSchema } from '../../domain/teams/team.service.ts';
import { uploadOptionSchemas } from '../../upload/upload-options.ts';
import { DEFAULT_TAG_LIMIT, DEFAULT_USAGE_DAYS, MAX_TAG_LIMIT, MAX_TAG_SEARCH_LENGTH, MAX_USAGE_DAYS } from '../../domain/media/library-limits.ts';
import {
  apiKeySchema, automationListSchema, automationSchema, automationWithSecretSchema, bulkResultSchema, createdTeamSchema, deliveryListSchema,
  deliverySchema, folderDeletionSchema, folderListSchema, folderSchema, groupSchema, healthSchema, mediaDeletionSchema, mediaLinkSchema,
  mediaListSchema, mediaFileSchema, planLimitsSchema, retriedSchema, tagListSchema, teamMemberSchema, teamSchema, uploadedMediaFileSchema, usageSchema,
} from './schemas.ts';
import { apiKeyInfoListSchema, teamAdminOperations } from './team-operations.ts';
import { idempotencyHeaders, replayedHeader } from './idempotency-docs.ts';
import { uploadUrlOperations } from './upload-url-operations.ts';
import { tusOperations } from './tus-operations.ts';
import { teamFileOperations } from './team-file-operations.ts';
import { userOperations } from './user-operations.ts';
import { accountOperations } from './account-operations.ts';
import { verificationOperations } from './verification-operations.ts';
import { JSON_BODY_ERRORS } from './common-errors.ts';

/**
 * The description of every route, keyed `<METHOD> <pattern>` exactly as the
 * route declares itself (src/http/routes). Request bodies are the very zod
 * schemas the services validate with; response bodies are in ./schemas.ts.
 * test/integration/openapi.test.ts fails while a mounted route has no entry
 * here or an entry names no mounted route; docs/design.md says how to add one.
 */

/** Who may call: a team API key, the operator secret, the metrics token (or loopback), or anyone. */
/** teamApiKey routes take a user's session token too (acting with that user's membership); sessionToken routes take only a session. */
export type Access = 'teamApiKey' | 'sessionToken' | 'authSecret' | 'metricsToken' | 'public';

export interface ResponseDoc {
  description: string;
  /** A JSON body; omit for an answer without one. */
  schema?: z.ZodType;
  /** Non-JSON answers: media type to its schema (e.g. text/html); beside `schema` when the answer depends on Accept. */
  content?: Record<string, z.ZodType>;
  headers?: z.ZodObject;
}

export interface OperationDoc {
  operationId: string;
  summary: string;
  description?: string;
  tag: Tag;
  access: Access;
  query?: z.ZodObject;
  /** Request headers the route reads (e.g. the paging headers). */
  headers?: z.ZodObject;
  /** A JSON body: the schema the service validates it with. Other media types through `bodyContent`. */
  body?: z.ZodType;
  bodyContent?: Record<string, z.ZodType>;
  bodyRequired?: boolean;
  /** Success answers by status. */
  responses: Record<number, ResponseDoc>;
  /** Error answers by status (all in the Error body), with what they mean on this route. */
  errors: Record<number, string>;
  /** Error statuses that carry Retry-After on this route, besides 429 and 503 (which always do). */
  retryAfterOn?: number[];
}

export const TAGS = {
  media: 'Media files: upload, list, link, change, delete.',
  folders: 'Media folders and their rules.',
  library: 'Tags in use and usage.',
  files: 'The files themselves, for browsers and CDNs.',
  automations: 'Webhook and Discord targets for team events, with their deliveries.',
  team: 'The team itself: read, change, archive.',
  logs: 'The team log: every change made to the team.',
  members: 'Members of the team: list, read, change, kick, leave.',
  groups: 'Groups of the team and who is in them.',
  apiKeys: 'The team\'s API keys.',
  modules: 'The team\'s modules.',
  invites: 'Invites into the team\'s groups.',
  plans: 'Plans, their limits and prices, and a team\'s plan.',
  teamFiles: 'Files members keep in the team, counted in the team storage with media.',
  todos: 'To-do boards, to-dos and their files.',
  auth: 'Signing up, in and out.',
  users: 'The signed-in user: its record, password, sessions and teams.',
  verification: 'Confirmations by mail: email verification, and actions (email change, ownership transfer, team and account deletion, export) confirmed by tokens.',
  operator: 'Teams, members, groups, keys, limits and users (operator secret).',
  operatorAutomations: 'The automation routes for the operator, for any team.',
  service: 'Health, metrics and this description.',
} as const;
export type Tag = keyof typeof TAGS;

/** Path parameters by name, for every pattern that uses them. */
export const PATH_PARAMETERS: Record<string, z.ZodType> = {
  teamId: z.uuid().meta({ description: 'The team; a team key must belong to it (401 otherwise).' }),
  mediaId: z.uuid().meta({ description: 'A media file of the team.' }),
  uploadId: z.uuid().meta({ description: 'A resumable (tus) upload of the team: the last segment of its Location.' }),
  folderId: z.uuid().meta({ description: 'A folder of the team.' }),
  memberId: z.uuid().meta({ description: 'A member of the team.' }),
  groupId: z.uuid().meta({ description: 'A group of the team.' }),
  noteId: z.uuid().meta({ description: 'A note about the member.' }),
  inviteId: z.uuid().meta({ description: 'An invite.' }),
  keyId: z.uuid().meta({ description: 'An API key id.' }),
  urlId: z.string().meta({ description: 'An upload URL, as createUploadUrl names it.' }),
  automationId: z.uuid().meta({ description: 'An automation of the team.' }),
  deliveryId: z.uuid().meta({ description: 'A delivery of the automation.' }),
  file: z.string().meta({ description: '`<mediaId>` or `<mediaId>.<ext>`, exactly as the file\'s path and links name it.' }),
  asset: z.string().meta({ description: 'A file of the documentation page.' }),
  fileId: z.uuid().meta({ description: 'A team file, or a to-do file.' }),
  boardId: z.uuid().meta({ description: 'A to-do board of the team.' }),
  todoId: z.uuid().meta({ description: 'A to-do of the team.' }),
  provider: z.string().meta({ description: 'An OAuth sign-in provider: discord or google; 404 unless configured.' }),
  providerId: z.string().meta({ description: 'A linked account\'s provider: credential, discord, google, minecraft-manual, hytale-manual.' }),
  sessionId: z.uuid().meta({ description: 'A session of the signed-in user.' }),
  code: z.string().meta({ description: 'A launcher sign-in code\'s identifier, `XXXX-XXXX` (any case).' }),
  userId: z.uuid().meta({ description: 'A user.' }),
  exportId: z.uuid().meta({ description: 'An account export, as its link names it.' }),
};

const jsonObject = z.record(z.string(), z.unknown());

const rateLimitHeaders = z.object({
  'RateLimit-Limit': z.int().meta({ description: 'Requests allowed per window for this key.', header: { id: 'RateLimitLimit' } }),
  'RateLimit-Remaining': z.int().meta({ description: 'Requests left in the current window.', header: { id: 'RateLimitRemaining' } }),
  'RateLimit-Reset': z.int().meta({ description: 'Seconds until the window resets.', header: { id: 'RateLimitReset' } }),
});
const retryAfter = z.int().meta({ description: 'Seconds to wait before retrying.', header: { id: 'RetryAfter' } });

const uploadAnswerHeaders = rateLimitHeaders.extend({ 'Idempotent-Replayed': replayedHeader.optional() });

const paging = z.object({
  pageNumber: z.int().min(1).max(1_000_000).default(1).meta({ description: 'Page to answer, from 1.', param: { id: 'PageNumber' } }),
  pageSize: z.int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE).meta({ description: `Items per page, 1-${MAX_PAGE_SIZE}.`, param: { id: 'PageSize' } }),
});

const deletionUrlQuery = z.boolean().optional().meta({
  description: 'true: the answer carries `deletionUrl`, a link that deletes this file without a key (ShareX\'s DeletionURL). Default false.',
});

const uploadQuery = z.object({
  public: uploadOptionSchemas.public.optional().meta({ description: 'Visibility; default true, or the target folder\'s defaultPublic.' }),
  fileName: uploadOptionSchemas.fileName.optional().meta({ description: 'Stored file name; default the uploaded file\'s name.' }),
  folder: uploadOptionSchemas.folder.optional(),
  folderId: uploadOptionSchemas.folderId.optional(),
  tags: uploadOptionSchemas.tagList.optional(),
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
  })
  .meta({ id: 'JsonUploadRequest', description: 'Other members are ignored.' });

/** The media update body: the service's schema, with the two fields it parses by hand shown as it parses them. */
const mediaUpdateBody = mediaUpdateSchema
  .extend({
    fileName: uploadOptionSchemas.fileName.optional(),
    tags: z.array(uploadOptionSchemas.tag).max(20).optional().meta({ description: 'Replaces all tags.' }),
  })
  .meta({ id: 'MediaUpdateRequest', description: 'Every field optional; `{}` answers the file unchanged. folderId null takes the file out of its folder.' });

const text = (description: string) => z.string().meta({ description });

const teamRoute = (permission: string) => `Needs \`${permission}\`.`;
const UPLOAD_ERRORS = {
  400: 'Invalid option, tag, folder or body; folder together with folderId; no file.',
  402: 'Plan limit: file larger than maxMediaFileSize, or the team storage (maxTeamStorage) is full.',
  404: 'folderId names no folder of the team.',
  408: 'The body stopped arriving for UPLOAD_IDLE_TIMEOUT_SECONDS.',
  413: 'The body is larger than the route allows.',
  415: 'Blocked file type: HTML, JavaScript, executables, shell scripts, SVG.',
  409: 'A request with the same Idempotency-Key is still running (messageKey error.media.idempotencyInFlight; retry after Retry-After).',
  422: 'The Idempotency-Key was used for a different request: another route, options or content (messageKey error.media.idempotencyKeyReused).',
  503: 'Upload capacity busy (messageKey error.media.uploadBusy; retry after Retry-After), or storage unavailable.',
};

const mediaBase = '/v1/cdn/media/:teamId';

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

const mediaOperations: Record<string, OperationDoc> = {
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
    description: `${teamRoute('team.media.view')} The public link of a public file; a link signed for one hour for a private one.`,
    tag: 'media',
    access: 'teamApiKey',
    responses: { 200: { description: 'The link.', schema: mediaLinkSchema } },
    errors: { 404: 'No such file in the team.' },
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

const fileOperations: Record<string, OperationDoc> = {
  'GET /media/team/:teamId/:file': {
    operationId: 'getFile',
    summary: 'The file itself',
    description:
      'No key: a public file to anyone; a private one only with a valid signed link (expires and signature from getMediaLink). ' +
      'Byte ranges and If-None-Match are honoured. Public links may point at CDN_URL, which pulls from here.',
    tag: 'files',
    access: 'public',
    query: z.object({
      expires: z.string().optional().meta({ description: 'Signed links: Unix time the link expires.' }),
      signature: z.string().optional().meta({ description: 'Signed links: the signature.' }),
    }),
    headers: z.object({
      Range: z.string().optional().meta({ description: 'One byte range, e.g. bytes=0-1023.' }),
      'If-None-Match': z.string().optional(),
    }),
    responses: {
      200: { description: 'The file, with its own Content-Type.', content: { '*/*': binary() } },
      206: { description: 'The requested range.', content: { '*/*': binary() } },
      304: { description: 'Not modified (If-None-Match matched the ETag).' },
      416: { description: 'The range is outside the file.' },
    },
    errors: { 403: 'The signed link is invalid or expired.', 404: 'No such file, or a private file without a signature.' },
  },
  'HEAD /media/team/:teamId/:file': {
    operationId: 'headFile',
    summary: 'The file\'s headers only',
    tag: 'files',
    access: 'public',
    query: z.object({ expires: z.string().optional(), signature: z.string().optional() }),
    responses: {
      200: { description: 'Headers of the whole file.' },
      206: { description: 'Headers of the range.' },
      304: { description: 'Not modified.' },
      416: { description: 'The range is outside the file.' },
    },
    errors: { 403: 'The signed link is invalid or expired.', 404: 'No such file, or a private file without a signature.' },
  },
};

function binary(): z.ZodType {
  return z.string().meta({ format: 'binary', contentMediaType: 'application/octet-stream' });
}

const operatorOperations: Record<string, OperationDoc> = {
  'GET /v1/admin/teams': {
    operationId: 'listTeams',
    summary: 'The teams, newest first',
    description: 'Archived teams too. `search` keeps the teams whose name contains it (any case).',
    tag: 'operator',
    access: 'authSecret',
    query: z.object({ search: z.string().max(MAX_SEARCH_LENGTH).optional().meta({ description: 'Case-insensitive part of the name.' }) }),
    headers: paging,
    responses: { 200: { description: 'One page of teams, and how many match.', schema: z.object({ data: z.array(teamSchema), count: z.int().min(0) }).meta({ id: 'TeamList' }) } },
    errors: { 400: 'Invalid search or paging header.' },
  },
  'GET /v1/admin/teams/:teamId/api-keys': {
    operationId: 'listApiKeys',
    summary: 'A team\'s API keys, newest first',
    description: 'Never a secret: a lost key is replaced (reroll) or a new one made.',
    tag: 'operator',
    access: 'authSecret',
    responses: { 200: { description: 'Every key of the team.', schema: apiKeyInfoListSchema } },
    errors: { 404: 'No such team.' },
  },
  'POST /v1/admin/teams': {
    operationId: 'createTeam',
    summary: 'Create a team with its owner and a first API key',
    tag: 'operator',
    access: 'authSecret',
    body: createTeamSchema.meta({ id: 'CreateTeamRequest' }),
    bodyRequired: true,
    responses: { 201: { description: 'Created; apiKey.key is shown only here.', schema: createdTeamSchema } },
    errors: { ...JSON_BODY_ERRORS, 400: 'Invalid name, or an unknown plan.' },
  },
  'POST /v1/admin/teams/:teamId/members': {
    operationId: 'createTeamMember',
    summary: 'Add a member',
    tag: 'operator',
    access: 'authSecret',
    body: createMemberSchema.meta({ id: 'CreateTeamMemberRequest' }),
    bodyRequired: true,
    responses: { 201: { description: 'Created.', schema: teamMemberSchema } },
    errors: { ...JSON_BODY_ERRORS, 402: 'The team has reached maxMembers.', 404: 'No such team or group.', 409: 'The name is taken in the team.' },
  },
  'POST /v1/admin/teams/:teamId/groups': {
    operationId: 'createGroup',
    summary: 'Create a group',
    tag: 'operator',
    access: 'authSecret',
    body: createGroupSchema.meta({ id: 'CreateGroupRequest' }),
    bodyRequired: true,
    responses: { 201: { description: 'Created.', schema: groupSchema } },
    errors: { ...JSON_BODY_ERRORS, 402: 'The team has reached maxGroups.', 404: 'No such team.' },
  },
  'POST /v1/admin/teams/:teamId/members/:memberId/groups': {
    operationId: 'addMemberToGroup',
    summary: 'Put a member into a group',
    description: 'The member\'s keys gain the group\'s permissions at once.',
    tag: 'operator',
    access: 'authSecret',
    body: addToGroupSchema.meta({ id: 'AddMemberToGroupRequest' }),
    bodyRequired: true,
    responses: { 204: { description: 'Added.' } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such team, member or group.', 409: 'The member is already in the group.' },
  },
  'POST /v1/admin/teams/:teamId/api-keys': {
    operationId: 'createApiKey',
    summary: 'Create an API key',
    description: 'Without teamMemberId the key acts as the owner; scopes ["media:upload"] limits it to the upload routes.',
    tag: 'operator',
    access: 'authSecret',
    body: createApiKeySchema.meta({ id: 'CreateApiKeyRequest' }),
    responses: { 201: { description: 'Created; key is shown only here.', schema: apiKeySchema } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such team or member.' },
  },
  'POST /v1/admin/api-keys/:keyId/reroll': {
    operationId: 'rerollApiKey',
    summary: 'Give a key a new secret',
    description: 'The old secret stops working at once, on every instance.',
    tag: 'operator',
    access: 'authSecret',
    responses: { 200: { description: 'The key with its new secret.', schema: apiKeySchema } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such key.' },
  },
  'DELETE /v1/admin/api-keys/:keyId': {
    operationId: 'deleteApiKey',
    summary: 'Delete a key',
    description: 'It stops working at once, on every instance.',
    tag: 'operator',
    access: 'authSecret',
    responses: { 204: { description: 'Deleted.' } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such key.' },
  },
  'PATCH /v1/admin/teams/:teamId/limits': {
    operationId: 'updateTeamLimits',
    summary: 'Override plan limits for one team',
    description: 'Any PlanLimits fields; null means unlimited.',
    tag: 'operator',
    access: 'authSecret',
    body: limitsPatchSchema.meta({ id: 'TeamLimitsPatch' }),
    bodyRequired: true,
    responses: { 200: { description: 'The team\'s effective limits.', schema: planLimitsSchema } },
    errors: { ...JSON_BODY_ERRORS, 404: 'No such team.' },
  },
};

const automationCreateBody = automationCreateSchema.meta({ id: 'AutomationCreateRequest' });
const automationUpdateBody = automationUpdateSchema.meta({ id: 'AutomationUpdateRequest' });

/** The automation route table (automation-routes.ts) under `base`, for the team key or the operator. */
function automationOperations(base: string, family: 'team' | 'operator'): Record<string, OperationDoc> {
  const operator = family === 'operator';
  const tag: Tag = operator ? 'operatorAutomations' : 'automations';
  const access: Access = operator ? 'authSecret' : 'teamApiKey';
  const id = (name: string) => (operator ? `operator${name[0]!.toUpperCase()}${name.slice(1)}` : name);
  const who = operator ? 'Operator secret; any team.' : teamRoute('team.automations.manage');
  const notFound = 'No such team, automation or delivery.';
  return {
    [`GET ${base}`]: {
      operationId: id('listAutomations'), summary: 'List automations', description: who, tag, access,
      responses: { 200: { description: 'Oldest first.', schema: automationListSchema } },
      errors: { 404: notFound },
    },
    [`POST ${base}`]: {
      operationId: id('createAutomation'), summary: 'Create an automation', description: `${who} At most maxAutomations per team.`, tag, access,
      body: automationCreateBody,
      bodyRequired: true,
      responses: { 201: { description: 'Created; secret is shown only here and on rotation.', schema: automationWithSecretSchema } },
      errors: { ...JSON_BODY_ERRORS, 400: 'Invalid field or target URL.', 402: 'The team has reached maxAutomations.', 404: 'No such team or folder.' },
    },
    [`GET ${base}/:automationId`]: {
      operationId: id('getAutomation'), summary: 'Get an automation', description: who, tag, access,
      responses: { 200: { description: 'The automation.', schema: automationSchema } },
      errors: { 404: notFound },
    },
    [`PATCH ${base}/:automationId`]: {
      operationId: id('updateAutomation'), summary: 'Change an automation', description: who, tag, access,
      body: automationUpdateBody,
      bodyRequired: true,
      responses: { 200: { description: 'The automation as it is now.', schema: automationSchema } },
      errors: { ...JSON_BODY_ERRORS, 400: 'Invalid field or target URL; an empty body.', 404: 'No such team, automation or folder.' },
    },
    [`DELETE ${base}/:automationId`]: {
      operationId: id('deleteAutomation'), summary: 'Delete an automation and its deliveries', description: who, tag, access,
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: notFound },
    },
    [`POST ${base}/:automationId/rotate-secret`]: {
      operationId: id('rotateAutomationSecret'), summary: 'Give an automation a new signing secret', description: who, tag, access,
      responses: { 200: { description: 'The automation with its new secret.', schema: automationWithSecretSchema } },
      errors: { 404: notFound },
    },
    [`GET ${base}/:automationId/deliveries`]: {
      operationId: id('listDeliveries'), summary: 'List an automation\'s deliveries', description: `${who} Newest first; paged by headers.`, tag, access,
      query: z.object({ status: z.enum(DELIVERY_STATUSES).optional() }),
      headers: paging,
      responses: { 200: { description: 'One page of deliveries.', schema: deliveryListSchema } },
      errors: { 400: 'Invalid status or paging header.', 404: notFound },
    },
    [`POST ${base}/:automationId/deliveries/retry-failed`]: {
      operationId: id('retryFailedDeliveries'), summary: 'Queue every failed delivery again', description: who, tag, access,
      responses: { 200: { description: 'How many were queued.', schema: retriedSchema } },
      errors: { 404: notFound },
    },
    [`POST ${base}/:automationId/deliveries/:deliveryId/retry`]: {
      operationId: id('retryDelivery'), summary: 'Queue one failed delivery again', description: who, tag, access,
      responses: { 200: { description: 'The delivery, pending again.', schema: deliverySchema } },
      errors: { 404: notFound, 409: 'The delivery has not failed.' },
    },
  };
}

const serviceOperations: Record<string, OperationDoc> = {
  'GET /': {
    operationId: 'root',
    summary: 'Where to start',
    description: 'Points to the human-readable documentation (/docs), this document (/v1/openapi.json) and /healthz.',
    tag: 'service',
    access: 'public',
    responses: {
      200: { description: 'Links.', schema: z.object({ service: z.string(), docs: z.string(), openapi: z.string(), health: z.string() }) },
    },
    errors: {},
  },
  'GET /healthz': {
    operationId: 'health',
    summary: 'Health',
    description: '200 once the service accepts requests; 503 while it starts or drains, or while a dependency (the database, the storage) is down: then `value` names the dependencies that are down and `message` says why.',
    tag: 'service',
    access: 'public',
    responses: { 200: { description: 'Ready.', schema: healthSchema } },
    errors: {},
  },
  'GET /metrics': {
    operationId: 'metrics',
    summary: 'Prometheus metrics of this instance',
    description: 'With METRICS_TOKEN set, needs it as a bearer token; without, only loopback clients get it.',
    tag: 'service',
    access: 'metricsToken',
    responses: { 200: { description: 'Prometheus text exposition.', content: { 'text/plain': text('Prometheus text format 0.0.4.') } } },
    errors: { 401: 'Missing or wrong metrics token.', 403: 'No METRICS_TOKEN set and the client is not on loopback.' },
  },
  'GET /v1/openapi.json': {
    operationId: 'openApiDocument',
    summary: 'This API description (OpenAPI 3.1)',
    tag: 'service',
    access: 'public',
    responses: { 200: { description: 'The document.', schema: jsonObject } },
    errors: {},
  },
  'GET /docs': {
    operationId: 'docsPage',
    summary: 'This API description as a page',
    tag: 'service',
    access: 'public',
    responses: { 200: { description: 'An HTML page rendering /v1/openapi.json.', content: { 'text/html': text('HTML') } } },
    errors: {},
  },
  'GET /docs/:asset': {
    operationId: 'docsAsset',
    summary: 'Scripts and styles of the documentation page',
    tag: 'service',
    access: 'public',
    responses: {
      200: {
        description: 'The asset.',
        content: { 'text/javascript': text('JavaScript'), 'text/css': text('CSS'), 'image/png': binary() },
      },
    },
    errors: { 404: 'No such asset.' },
  },
};

export const operations: Record<string, OperationDoc> = {
  ...mediaOperations,
  ...uploadUrlOperations(mediaBase),
  ...tusOperations,
  ...fileOperations,
  ...automationOperations('/v1/teams/:teamId/automations', 'team'),
  ...teamAdminOperations(paging),
  ...teamFileOperations(paging),
  ...operatorOperations,
  ...userOperations,
  ...accountOperations,
  ...verificationOperations,
  ...automationOperations('/v1/admin/teams/:teamId/automations', 'operator'),
  ...serviceOperations,
};

export { rateLimitHeaders, retryAfter };
