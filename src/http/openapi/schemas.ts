import { z } from 'zod';
import { AUTOMATION_KINDS, DELIVERY_STATUSES } from '../../domain/automations/automation.entity.ts';
import { eventKinds } from '../../domain/automations/event-kinds.ts';
import { defaultPlanLimits, booleanLimitKeys, type PlanLimitKey } from '../../domain/plans/plan-limits.ts';

/**
 * The response bodies of the API description, in zod. The services build
 * these answers (src/domain/views.ts and the services' own views); the
 * integration tests validate every JSON answer they receive against the
 * document made from these schemas, so a field added, removed or retyped on
 * either side fails the suite. Each `.meta({ id })` becomes a named component
 * (`#/components/schemas/<id>`), which client generators turn into types.
 */

const id = z.uuid();
const timestamp = z.iso.datetime();
const count = z.number().int().min(0);
const bytes = z.number().int().min(0);

export const errorBodySchema = z
  .object({
    name: z.string().meta({ description: 'Error class, such as BadRequestError or TeamLimitError.', example: 'BadRequestError' }),
    message: z.string().meta({ description: 'Human-readable explanation.' }),
    status: z.number().int().meta({ description: 'The HTTP status again.' }),
    messageKey: z.string().meta({ description: 'Stable key for translations and client logic, such as error.teamLimits.maxTeamStorage.', example: 'error.badRequest' }),
    value: z.union([z.number(), z.string()]).optional().meta({ description: 'Detail: the field, limit or argument concerned.' }),
  })
  .meta({ id: 'Error', description: 'The error body of every 4xx and 5xx answer.' });

export const healthSchema = z
  .object({
    status: z.literal('ok'),
    dependencies: z.record(z.string(), z.literal('ok')).meta({ description: 'Each dependency checked (database, storage) and its state.' }),
  })
  .meta({ id: 'Health' });

export const teamSchema = z
  .object({
    id,
    name: z.string(),
    logo: z.string().nullable(),
    isActive: z.boolean(),
    createdAt: timestamp,
    updatedAt: timestamp,
    priceId: z.string().nullable(),
    planId: id.nullable(),
    archived: z.boolean(),
    setup: z.boolean(),
    timezone: z.string(),
    locale: z.string(),
    stripMetadata: z.boolean().meta({ description: 'Whether uploads that do not say `stripMetadata` have the EXIF, XMP and IPTC of their JPEG, PNG and WebP images stripped. Default false.' }),
  })
  .meta({ id: 'Team' });

export const teamMemberSchema = z
  .object({
    id,
    teamId: id,
    userId: id,
    name: z.string(),
    image: z.string().nullable(),
    personalNote: z.string(),
    mainGroupId: id.nullable(),
    permissions: z.array(z.string()),
    sort: z.number().int(),
    createdAt: timestamp,
    isTeamOwner: z.boolean(),
    lastSelection: timestamp.nullable(),
    totalSelections: z.number().int(),
    joinedTeamAt: timestamp,
    leftTeamAt: timestamp.nullable(),
    archived: z.boolean(),
    adminExpiresAt: timestamp.nullable(),
    adminJoinedAt: timestamp.nullable(),
  })
  .meta({ id: 'TeamMember' });

export const groupSchema = z
  .object({
    id,
    teamId: id,
    name: z.string(),
    permissions: z.array(z.string()),
    createdAt: timestamp,
    updatedAt: timestamp,
    sort: z.number().int(),
    color: z.string(),
  })
  .meta({ id: 'Group' });

export const apiKeySchema = z
  .object({
    id,
    teamId: id,
    createdAt: timestamp,
    updatedAt: timestamp,
    description: z.string().nullable(),
    teamMemberId: id.nullable(),
    teamMember: z.object({ id, name: z.string() }).nullable(),
    scopes: z.array(z.string()).meta({ description: 'Empty for a full key; ["media:upload"] for a key that reaches only the upload routes.' }),
    key: z.string().meta({ description: 'The secret, shown only by creation and reroll.' }),
  })
  .meta({ id: 'ApiKey' });

function limitSchema(key: PlanLimitKey): z.ZodType {
  if ((booleanLimitKeys as readonly string[]).includes(key)) return z.boolean();
  if (key === 'customerDiscordRoleId') return z.string();
  return z.number().int().min(0).nullable();
}

export const planLimitsSchema = z
  .object(Object.fromEntries(Object.keys(defaultPlanLimits).map((key) => [key, limitSchema(key as PlanLimitKey)])))
  .meta({
    id: 'PlanLimits',
    description: 'A team\'s effective limits: its plan\'s with its own overrides on top. null means unlimited; maxTeamStorage is in KiB, maxMediaFileSize in bytes.',
  });

export const createdTeamSchema = z
  .object({ team: teamSchema, owner: teamMemberSchema, apiKey: apiKeySchema })
  .meta({ id: 'CreatedTeam', description: 'The team, its owner (every permission) and a first key that acts as the owner.' });

export const mediaFileSchema = z
  .object({
    id,
    path: z.string().meta({ description: 'media/team/<teamId>/<file>', example: 'media/team/0f8a.../5b1c....png' }),
    publicUrl: z.string().nullable().meta({ description: 'The public (or CDN) link; null for a private file.' }),
    public: z.boolean(),
    folderId: id.nullable(),
    tags: z.array(z.string()),
    fileName: z.string(),
    size: bytes,
    contentType: z.string(),
    hash: z.string().nullable().meta({ description: 'xxh3-128 of the content, hex.' }),
    thumbnailUrl: z.string().nullable().meta({
      description: 'A small WebP of an image (PNG, JPEG, WebP, GIF, AVIF), or of a video\'s frame when the service has ffmpeg, made in the background after the upload: null until it is made, '
        + 'for other types, and for images that cannot be decoded. Public file: a public (or CDN) link; private file: a link signed for an hour.',
    }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'MediaFile' });

export const uploadedMediaFileSchema = mediaFileSchema
  .extend({
    usedTeamStorage: bytes.meta({ description: 'Bytes the team uses after this upload (storage shared with other team files).' }),
    deletionUrl: z.string().optional().meta({
      description: 'Only when the upload asked with `deletionUrl=true` (the two upload routes): a link that deletes this one file, '
        + 'without a key and without expiry (see GET /v1/cdn/media/{teamId}/deletion-links/{mediaId}).',
    }),
  })
  .meta({ id: 'UploadedMediaFile', description: 'The media file shape of the upload answers.' });

export const mediaListSchema = z
  .object({
    media: z.array(mediaFileSchema),
    totalCount: count.meta({ description: 'Files matching the filters, over all pages.' }),
    usedTeamStorage: bytes,
  })
  .meta({ id: 'MediaList' });

export const mediaUploaderSchema = z
  .object({
    keyId: id,
    name: z.string().nullable().meta({ description: 'The key\'s description; null when it has none.' }),
  })
  .meta({ id: 'MediaUploader', description: 'The API key that uploaded the file (also through an upload URL it made).' });

export const mediaLinkSchema = z
  .object({
    url: z.string().meta({ description: 'The public link, or for a private file a link signed for one hour.' }),
    uploadedBy: mediaUploaderSchema.nullable().meta({
      description: 'The API key that uploaded the file; null when a signed-in member uploaded it (or an upload URL a member made), or the key was deleted.',
    }),
  })
  .meta({ id: 'MediaLink' });

export const textPreviewSchema = z
  .object({
    id,
    fileName: z.string(),
    contentType: z.string().meta({ description: 'The stored (sniffed) type: text/*, JSON, or gzip for a gzipped text file.' }),
    size: bytes.meta({ description: 'The stored file\'s size (for gzip: compressed).' }),
    from: z.enum(['start', 'end']),
    lines: z.array(z.string()).meta({
      description: 'The first (from=start) or last (from=end) lines, in file order, without their line breaks (LF or CRLF). '
        + 'Decoded as UTF-8; invalid bytes are U+FFFD.',
    }),
    cutLines: z.array(z.number().int().min(0)).meta({
      description: 'Indexes into lines of lines not shown whole: longer than 4096 characters (their start is shown), or cut by a read bound.',
    }),
    truncated: z.boolean().meta({
      description: 'A read bound stopped the reading, so lines are not exactly the first or last lines asked for: fewer lines, '
        + 'a line cut by the bound, or (gzip, from=end) the last lines of the first 8 MiB decompressed rather than of the whole file.',
    }),
    bytesRead: bytes.meta({ description: 'Bytes read from storage: at most 256 KiB (gzip from=end: 8 MiB).' }),
    decompressedBytes: bytes.nullable().meta({ description: 'gzip: bytes decompressed (at most 256 KiB from the start, 8 MiB from the end); null for plain text.' }),
  })
  .meta({ id: 'TextPreview' });

export const mediaDeletionSchema = z.object({ deleted: id, usedTeamStorage: bytes }).meta({ id: 'MediaDeletion' });

export const bulkResultSchema = z
  .object({
    affected: count,
    failed: z.array(z.object({ id: z.string(), message: z.string() })).meta({ description: 'Files not processed, such as ids not of this team or a file that would pass 20 tags.' }),
  })
  .meta({ id: 'BulkResult' });

export const folderSchema = z
  .object({
    id,
    name: z.string(),
    parentId: id.nullable(),
    depth: z.number().int().min(1),
    retentionDays: z.number().int().nullable(),
    maxFiles: z.number().int().nullable(),
    defaultPublic: z.boolean().nullable(),
    fileCount: count.meta({ description: 'Files directly in the folder.' }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Folder' });

export const folderListSchema = z
  .object({ folders: z.array(folderSchema).meta({ description: 'Flat, parents before children (depth, then name).' }) })
  .meta({ id: 'FolderList' });

export const folderDeletionSchema = z
  .object({ deleted: id, movedFiles: count, movedFolders: count })
  .meta({ id: 'FolderDeletion', description: 'The folder\'s files and direct subfolders moved to its parent.' });

export const tagListSchema = z
  .object({ tags: z.array(z.object({ tag: z.string(), count: z.number().int().min(1) })) })
  .meta({ id: 'TagList', description: 'Most used first; with search, tags starting with the text first.' });

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/).meta({ description: 'UTC day, YYYY-MM-DD.' });

export const usageSchema = z
  .object({
    days: z.number().int().min(1),
    storage: z.object({
      usedBytes: bytes,
      limitBytes: bytes.nullable().meta({ description: 'maxTeamStorage in bytes; null: unlimited.' }),
      mediaBytes: bytes,
      teamFileBytes: bytes.meta({ description: 'Bytes of the team files.' }),
      todoFileBytes: bytes.meta({ description: 'Bytes of the to-do files. usedBytes is mediaBytes + teamFileBytes + todoFileBytes.' }),
      maxFileSizeBytes: bytes.nullable(),
    }),
    limits: planLimitsSchema,
    uploads: z.array(z.object({ date: day, uploads: count, bytes, apiUploads: count })),
    served: z
      .array(z.object({ date: day, requests: count, bytes }))
      .meta({ description: 'GET/HEAD of /media/team/... answered by this service (not by a CDN in front of it).' }),
  })
  .meta({ id: 'Usage' });

const automationFields = {
  id,
  teamId: id,
  name: z.string(),
  kind: z.enum(AUTOMATION_KINDS),
  url: z.string(),
  eventKinds: z.array(z.enum(eventKinds as [string, ...string[]])),
  folderId: id.nullable(),
  includeSubfolders: z.boolean(),
  tags: z.array(z.string()),
  enabled: z.boolean(),
  createdAt: timestamp,
  updatedAt: timestamp,
};

export const automationSchema = z.object(automationFields).meta({ id: 'Automation' });

export const automationWithSecretSchema = z
  .object({ ...automationFields, secret: z.string().meta({ description: 'Signing secret of the deliveries; shown only by creation and rotation.' }) })
  .meta({ id: 'AutomationWithSecret' });

export const automationListSchema = z.object({ data: z.array(automationSchema), count }).meta({ id: 'AutomationList' });

export const deliverySchema = z
  .object({
    id,
    automationId: id,
    eventId: id,
    eventKind: z.string(),
    mediaId: id.nullable(),
    occurredAt: timestamp,
    status: z.enum(DELIVERY_STATUSES),
    attempts: count,
    nextAttemptAt: timestamp.nullable().meta({ description: 'When the next attempt is due (pending only).' }),
    lastStatus: z.number().int().nullable().meta({ description: 'HTTP status of the last answer; null when there was none.' }),
    lastError: z.string().nullable(),
    deliveredAt: timestamp.nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Delivery' });

export const deliveryListSchema = z.object({ data: z.array(deliverySchema), count }).meta({ id: 'DeliveryList' });

export const retriedSchema = z.object({ retried: count }).meta({ id: 'RetryFailedResult' });
