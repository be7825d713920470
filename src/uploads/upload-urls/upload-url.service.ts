import { randomUUID } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { Principal } from '../../auth/principal.ts';
import { makerOf, type UploadMaker } from '../../auth/upload-maker.ts';
import { notFound, teamArchived, unsupportedMediaType, uploadUrlRefused } from '../../errors/errors.ts';
import { checkNameAndType } from '../../domain/file-types.ts';
import { MAX_TAGS } from '../../domain/tags.ts';
import { parseOptionFields, uploadOptionSchemas, type UploadOptions } from '../options/upload-options.ts';
import { findFolder } from '../../domain/folders/folder-resolver.ts';
import type { SignedLinks } from '../../domain/media/signed-links.ts';
import { parseInput } from '../../domain/validation.ts';
import { contentTypeListSchema } from '../options/file-constraints.ts';

export const UPLOAD_URL_MIN_SECONDS = 60;
export const UPLOAD_URL_MAX_SECONDS = 3600;
export const UPLOAD_URL_DEFAULT_SECONDS = 900;
/** The HKDF label of the key upload URLs are signed with: neither the operator secret nor the signed links' key. */
export const UPLOAD_URL_KEY_LABEL = 'media-upload-urls/v1';

/**
 * The body of POST /upload-urls. The shapes are checked here; the option values then go through
 * the upload routes' own validators (parseOptionFields), so a value an upload would refuse is
 * refused here with the same 400.
 */
export const createUploadUrlSchema = z
  .strictObject({
    fileName: uploadOptionSchemas.fileName.optional().meta({ description: 'Stored file name; without it the uploaded file\'s own name.' }),
    folder: uploadOptionSchemas.folder.optional(),
    folderId: uploadOptionSchemas.folderId.optional(),
    tags: z.union([z.array(uploadOptionSchemas.tag).max(MAX_TAGS), uploadOptionSchemas.tagList]).optional(),
    public: uploadOptionSchemas.public.optional().meta({ description: 'Visibility; without it the target folder\'s defaultPublic, else public.' }),
    stripMetadata: uploadOptionSchemas.stripMetadata.optional(),
    maxSizeBytes: z.int().min(1).max(Number.MAX_SAFE_INTEGER).optional().meta({ description: 'The largest file the URL takes (413 beyond).' }),
    contentTypes: contentTypeListSchema.optional(),
    expiresInSeconds: z
      .int()
      .min(UPLOAD_URL_MIN_SECONDS)
      .max(UPLOAD_URL_MAX_SECONDS)
      .optional()
      .meta({ description: `Validity in seconds, ${UPLOAD_URL_MIN_SECONDS}-${UPLOAD_URL_MAX_SECONDS}; default ${UPLOAD_URL_DEFAULT_SECONDS}.` }),
  })
  .meta({ id: 'UploadUrlCreateRequest', description: 'Every field optional: what the URL fixes for its upload.' });

/** What an upload URL fixes for its one upload. */
export interface UploadUrlConstraints {
  id: string;
  teamId: string;
  /** The key that made the URL: the upload is recorded as uploaded by it; null for a URL a session made. */
  keyId: string | null;
  /** The session that made the URL (it dies with the session); null for a key's. */
  sessionId: string | null;
  /** The key or session that made the URL: a use is refused once it could no longer upload. */
  maker: UploadMaker;
  options: UploadOptions;
  /** The requested maximum file size (413 beyond); null: only the route's and the team's limits. */
  maxSizeBytes: number | null;
  /** Allowed content types (`type/subtype` or `type/*`); null: any type the upload policy allows. */
  contentTypes: readonly string[] | null;
}

export interface CreatedUploadUrl {
  url: string;
  method: 'POST';
  fields: { name: 'file' };
  expiresAt: string;
  maxSizeBytes: number;
}

export interface UploadUrlServiceDeps {
  orm: MikroORM;
  signer: SignedLinks;
  /** PUBLIC_URL: the URL's origin. */
  publicUrl: string;
}

interface UploadUrlRow {
  id: string;
  team_id: string;
  key_id: string | null;
  key_prefix: string | null;
  session_id: string | null;
  user_id: string | null;
  file_name: string | null;
  folder_path: string[] | null;
  folder_id: string | null;
  tags: string[];
  is_public: boolean | null;
  strip_metadata: boolean | null;
  max_size_bytes: string | null;
  content_types: string[] | null;
}

// One JSON parameter (MikroORM inlines parameters; PostgreSQL turns the JSON arrays into text[]).
const INSERT = `
insert into upload_url (id, team_id, key_id, key_prefix, session_id, user_id, file_name, folder_path, folder_id, tags, is_public, strip_metadata, max_size_bytes, content_types, expires_at)
select id, team_id, key_id, key_prefix, session_id, user_id, file_name, folder_path, folder_id, tags, is_public, strip_metadata, max_size_bytes, content_types, expires_at
  from jsonb_to_record(?::jsonb) as r(id uuid, team_id uuid, key_id uuid, key_prefix varchar, session_id uuid, user_id uuid, file_name varchar, folder_path text[],
                                      folder_id uuid, tags text[], is_public boolean, strip_metadata boolean, max_size_bytes bigint, content_types text[], expires_at timestamptz)`;

const COLUMNS = 'id, team_id, key_id, key_prefix, session_id, user_id, file_name, folder_path, folder_id, tags, is_public, strip_metadata, max_size_bytes, content_types';

const CLAIM = `
update upload_url set state = 'claimed', claimed_at = now()
 where id = ? and team_id = ? and state = 'open' and expires_at > now()
   and not exists (select 1 from team where team.id = upload_url.team_id and team.archived)
returning ${COLUMNS}`;

// Only while nothing was committed under the upload's media id: a commit whose answer was lost
// (the connection to PostgreSQL dropped after COMMIT) keeps the URL used.
const RELEASE = `
update upload_url set state = 'open', claimed_at = null
 where id = ? and state = 'claimed' and not exists (select 1 from media_file where id = ?)`;

const CONSUME = `update upload_url set state = 'used', media_id = ? where id = ?`;

/** The path the signature covers: team and URL id (the upload route's path names both). */
export function uploadUrlSignedPath(teamId: string, urlId: string): string {
  return `upload-urls/${teamId}/${urlId}`;
}

/**
 * Upload URLs: a team key makes one (a row holding what it fixes, and a URL signed with a key
 * derived from the operator secret); anyone holding the URL may upload one file with it. Claiming
 * is one conditional UPDATE, so of two uses racing on any instances exactly one proceeds.
 */
export class UploadUrlService {
  private readonly deps: UploadUrlServiceDeps;

  constructor(deps: UploadUrlServiceDeps) {
    this.deps = deps;
  }

  /**
   * Validates the options (400, 404 folderId), stores the row and answers the signed URL.
   * `record`: runs in the row's transaction with the answer (an Idempotency-Key records it there,
   * so no crash leaves a URL made for a key that is free again, nor a key recording a URL never made).
   */
  async create(
    principal: Principal,
    input: unknown,
    limits: { maxMediaFileSize: number | null; routeMaxBytes: number },
    record?: (created: CreatedUploadUrl, em: EntityManager) => Promise<void>,
  ): Promise<CreatedUploadUrl> {
    const data = parseInput(createUploadUrlSchema, input);
    const options = parseOptionFields(data);
    // A fixed name of a blocked type would refuse every use: refused here instead, as an upload of it would be.
    const blocked = options.fileName === null ? null : checkNameAndType(options.fileName, null);
    if (blocked) throw unsupportedMediaType(`Blocked file type: ${blocked}`, blocked);
    const em = this.deps.orm.em.fork();
    if (options.folderId && !(await findFolder(em, principal.teamId, options.folderId))) throw notFound('folder', options.folderId);
    const { signer } = this.deps;
    const id = randomUUID();
    const expires = signer.nowSeconds() + (data.expiresInSeconds ?? UPLOAD_URL_DEFAULT_SECONDS);
    const expiresAt = new Date(expires * 1000);
    const maxSizeBytes = Math.min(data.maxSizeBytes ?? Infinity, limits.maxMediaFileSize ?? Infinity, limits.routeMaxBytes);
    const path = uploadUrlSignedPath(principal.teamId, id);
    const created: CreatedUploadUrl = {
      url: `${this.deps.publicUrl}/v1/cdn/media/${principal.teamId}/upload-urls/${id}${signer.signUntil(path, expires)}`,
      method: 'POST',
      fields: { name: 'file' },
      expiresAt: expiresAt.toISOString(),
      maxSizeBytes,
    };
    const maker = makerOf(principal);
    const row = JSON.stringify({
      id, team_id: principal.teamId, key_id: maker.keyId, key_prefix: maker.keyPrefix, session_id: maker.sessionId, user_id: maker.userId, file_name: options.fileName, folder_path: options.folderPath, folder_id: options.folderId,
      tags: options.tags, is_public: options.public, strip_metadata: options.stripMetadata, max_size_bytes: data.maxSizeBytes ?? null, content_types: data.contentTypes ? [...new Set(data.contentTypes.map((type) => type.toLowerCase()))] : null,
      expires_at: expiresAt.toISOString(),
    });
    const store = async (tx: EntityManager) => {
      // Expired rows answer nothing any more (the signature has expired too): each creation sweeps its team's.
      await tx.execute('delete from upload_url where team_id = ? and expires_at < now()', [principal.teamId]);
      await tx.execute(INSERT, [row]);
      if (record) await record(created, tx);
    };
    if (record) await em.transactional(store);
    else await store(em);
    return created;
  }

  /**
   * What a URL fixes, whatever its state (a retried use replays through it). For a URL whose
   * signature passed, no row means its key, session or team was deleted (expired rows are the only
   * others removed, and their signature has expired too): 403, as for a maker who lost access.
   */
  async constraints(teamId: string, urlId: string): Promise<UploadUrlConstraints> {
    const [row] = await this.deps.orm.em.fork().execute<UploadUrlRow[]>(`select ${COLUMNS} from upload_url where id = ? and team_id = ?`, [urlId, teamId]);
    if (!row) throw uploadUrlRefused('revoked');
    return constraintsOf(row);
  }

  /** Checks the URL's signature and expiry: 403 altered or malformed, 410 expired. */
  verify(teamId: string, urlId: string, expires: string | null, signature: string | null): void {
    const check = this.deps.signer.verify(uploadUrlSignedPath(teamId, urlId), expires, signature);
    if (!check.valid) throw uploadUrlRefused(check.reason === 'expired' ? 'expired' : 'invalid');
  }

  /**
   * Claims the URL for one upload, atomically across instances; answers what it fixes. Refuses
   * with 410 (used, expired), 409 (another upload to it is running), 403 (the team is archived, or
   * the URL is gone: its key, session or team was deleted).
   */
  async claim(teamId: string, urlId: string): Promise<UploadUrlConstraints> {
    const em = this.deps.orm.em.fork();
    const [row] = await em.execute<UploadUrlRow[]>(CLAIM, [urlId, teamId]);
    if (row) return constraintsOf(row);
    const [current] = await em.execute<{ state: string; expired: boolean; archived: boolean }[]>(
      'select u.state, u.expires_at <= now() as expired, t.archived from upload_url u join team t on t.id = u.team_id where u.id = ? and u.team_id = ?',
      [urlId, teamId],
    );
    if (!current) throw uploadUrlRefused('revoked');
    if (current.archived) throw teamArchived(); // an archived team stores nothing, also through its URLs
    if (current.state === 'used') throw uploadUrlRefused('used');
    if (current.expired) throw uploadUrlRefused('expired');
    throw uploadUrlRefused('inUse');
  }

  /** The claimed upload stored nothing: the URL may be used again (until it expires). */
  async release(urlId: string, mediaId: string): Promise<void> {
    await this.deps.orm.em.fork().execute(RELEASE, [urlId, mediaId]);
  }

  /** The claimed upload is committed as `mediaId`: the URL is used for good. */
  async consume(urlId: string, mediaId: string): Promise<void> {
    await this.deps.orm.em.fork().execute(CONSUME, [mediaId, urlId]);
  }
}

function constraintsOf(row: UploadUrlRow): UploadUrlConstraints {
  return {
    id: row.id,
    teamId: row.team_id,
    keyId: row.key_id,
    sessionId: row.session_id,
    maker: { keyId: row.key_id, keyPrefix: row.key_prefix, sessionId: row.session_id, userId: row.user_id },
    options: {
      fileName: row.file_name,
      folderPath: row.folder_path,
      folderId: row.folder_id,
      tags: row.tags,
      public: row.is_public,
      stripMetadata: row.strip_metadata,
    },
    maxSizeBytes: row.max_size_bytes === null ? null : Number(row.max_size_bytes),
    contentTypes: row.content_types,
  };
}
