import type { MikroORM } from '@mikro-orm/postgresql';
import { badRequest, notFound } from '../../errors/errors.ts';
import { parseTags } from '../tags.ts';
import type { Paging } from '../paging.ts';
import { isUuid } from '../validation.ts';
import { Team } from '../teams/team.entity.ts';
import { MediaFile } from './media-file.entity.ts';
import { mediaPath, publicMediaUrl } from './media-links.ts';
import type { SignedLinks } from './signed-links.ts';
import { thumbnailPath } from './thumbnail-links.ts';

export const MEDIA_TYPES = ['image', 'video', 'audio', 'document', 'all'] as const;
export type MediaType = (typeof MEDIA_TYPES)[number];
export const MAX_SEARCH_LENGTH = 255;

/** The list filters of spec 4.4, validated; absent means no filter. */
export interface MediaListFilters {
  /** A folder id, or 'none' for files without a folder. */
  folderId?: string;
  /** Only with a folder id: files of every descendant folder too. */
  includeSubfolders?: boolean;
  /** A file must carry all of them. */
  tags?: string[];
  /** Case-insensitive substring of the file name. */
  search?: string;
  type?: MediaType;
}

/**
 * Document content types (compared without parameters such as `; charset=`):
 * every text/* type, plus these and the OOXML / OpenDocument families.
 */
export const DOCUMENT_CONTENT_TYPES = [
  'application/pdf',
  'application/json',
  'application/xml',
  'application/rtf',
  'application/msword',
  'application/vnd.ms-excel',
  'application/vnd.ms-powerpoint',
  'application/epub+zip',
  'application/x-yaml',
  'application/yaml',
] as const;
const DOCUMENT_CONTENT_TYPE_PREFIXES = ['text/', 'application/vnd.openxmlformats-officedocument.', 'application/vnd.oasis.opendocument.'] as const;

/** Escapes LIKE wildcards; the escape character is '!' (see `escape '!'` in the queries). */
export function escapeLike(value: string): string {
  return value.replace(/[!%_]/g, (character) => `!${character}`);
}

/** Parses the list query parameters of spec 4.4; any invalid value is a 400. */
export function parseListFilters(query: URLSearchParams): MediaListFilters {
  const filters: MediaListFilters = {};
  const folderId = query.get('folderId');
  if (folderId !== null && folderId !== '') {
    if (folderId !== 'none' && !isUuid(folderId)) throw badRequest('folderId must be a folder id or "none".', 'folderId');
    filters.folderId = folderId === 'none' ? 'none' : folderId.toLowerCase();
  }
  const includeSubfolders = query.get('includeSubfolders');
  if (includeSubfolders !== null && includeSubfolders !== '') {
    if (includeSubfolders !== 'true' && includeSubfolders !== 'false') {
      throw badRequest('includeSubfolders must be true or false.', 'includeSubfolders');
    }
    filters.includeSubfolders = includeSubfolders === 'true';
  }
  const tags = query.get('tags');
  if (tags !== null && tags !== '') filters.tags = parseTags(tags);
  const search = query.get('search');
  if (search !== null && search !== '') {
    if (search.length > MAX_SEARCH_LENGTH) throw badRequest(`search is at most ${MAX_SEARCH_LENGTH} characters.`, 'search');
    filters.search = search;
  }
  const type = query.get('type');
  if (type !== null && type !== '') {
    if (!(MEDIA_TYPES as readonly string[]).includes(type)) throw badRequest(`type must be one of ${MEDIA_TYPES.join(', ')}.`, 'type');
    filters.type = type as MediaType;
  }
  return filters;
}

/** SQL for a media type on `f.content_type`; null for 'all'. */
function typeCondition(type: MediaType): { sql: string; params: unknown[] } | null {
  const base = `split_part(f.content_type, ';', 1)`;
  switch (type) {
    case 'image':
    case 'video':
    case 'audio':
      return { sql: `f.content_type like ?`, params: [`${type}/%`] };
    case 'document':
      return {
        sql: `(${base} in (?) or ${DOCUMENT_CONTENT_TYPE_PREFIXES.map(() => `${base} like ?`).join(' or ')})`,
        params: [[...DOCUMENT_CONTENT_TYPES], ...DOCUMENT_CONTENT_TYPE_PREFIXES.map((prefix) => `${escapeLike(prefix)}%`)],
      };
    case 'all':
      return null;
  }
}

export interface MediaServiceOptions {
  orm: MikroORM;
  /** Base of public links: CDN_URL, or this service's own address. */
  linkBaseUrl: string;
  /** This service's own address: the base of signed links (a CDN does not check signatures). */
  publicUrl: string;
  /** Signs the thumbnail links of private files; null (the CLI): private files show none. */
  links: SignedLinks | null;
}

/** The values of a media row that its API record shows. */
export interface MediaRecord {
  id: string;
  teamId: string;
  folderId: string | null;
  fileName: string;
  isPublic: boolean;
  tags: string[];
  size: number;
  contentType: string;
  hash: string | null;
  /** Migration20261128020000Thumbnails; absent: none yet (a row just committed). */
  thumbnailStatus?: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export class MediaService {
  private readonly orm: MikroORM;
  private readonly linkBaseUrl: string;
  private readonly publicUrl: string;
  private readonly links: SignedLinks | null;

  constructor(options: MediaServiceOptions) {
    this.orm = options.orm;
    this.linkBaseUrl = options.linkBaseUrl;
    this.publicUrl = options.publicUrl;
    this.links = options.links;
  }

  view(file: MediaFile) {
    return this.recordView({
      id: file.id, teamId: file.team.id, folderId: file.folder?.id ?? null, fileName: file.fileName, isPublic: file.isPublic,
      tags: file.tags, size: file.size, contentType: file.contentType, hash: file.hash ?? null, thumbnailStatus: file.thumbnailStatus ?? null,
      createdAt: file.createdAt, updatedAt: file.updatedAt,
    });
  }

  /** The API's media record (spec 4.2) of a row's values, for callers that hold no entity. */
  recordView(file: MediaRecord) {
    const path = mediaPath(file.teamId, file.id, file.fileName);
    return {
      id: file.id,
      path,
      publicUrl: file.isPublic ? publicMediaUrl(this.linkBaseUrl, path) : null,
      public: file.isPublic,
      folderId: file.folderId,
      tags: file.tags,
      fileName: file.fileName,
      size: file.size,
      contentType: file.contentType,
      hash: file.hash,
      thumbnailUrl: file.thumbnailStatus === 'ready' ? this.thumbnailUrl(file) : null,
      createdAt: file.createdAt.toISOString(),
      updatedAt: file.updatedAt.toISOString(),
    };
  }

  /** Public file: a link as cacheable as the file's; private: signed, like its preview link. */
  private thumbnailUrl(file: MediaRecord): string | null {
    const path = thumbnailPath(file.teamId, file.id);
    if (file.isPublic) return publicMediaUrl(this.linkBaseUrl, path);
    return this.links ? `${publicMediaUrl(this.publicUrl, path)}${this.links.sign(path)}` : null;
  }

  /**
   * Newest first; ties broken by id so pages never overlap. Raw SQL with `?`
   * placeholders (MikroORM inlines them escaped); rows are mapped back to
   * entities so the records come from view().
   */
  async list(teamId: string, query: Paging, filters: MediaListFilters = {}) {
    const em = this.orm.em.fork();
    const team = await em.findOne(Team, { id: teamId }, { fields: ['usedStorage'] });
    if (!team) throw notFound('team', teamId);

    const conditions: string[] = ['f.team_id = ?'];
    const params: unknown[] = [teamId];
    if (filters.folderId === 'none') {
      conditions.push('f.folder_id is null');
    } else if (filters.folderId !== undefined) {
      const folderIds = await this.folderIds(teamId, filters.folderId, filters.includeSubfolders === true);
      conditions.push(folderIds.length === 1 ? 'f.folder_id = ?' : 'f.folder_id in (?)');
      params.push(folderIds.length === 1 ? folderIds[0] : folderIds);
    }
    if (filters.tags && filters.tags.length > 0) {
      // Uses the GIN index on tags.
      conditions.push('f.tags @> array[?]::text[]');
      params.push(filters.tags);
    }
    if (filters.search !== undefined) {
      // Matches the trigram index on lower(file_name).
      conditions.push(`lower(f.file_name) like lower(?) escape '!'`);
      params.push(`%${escapeLike(filters.search)}%`);
    }
    const type = filters.type ? typeCondition(filters.type) : null;
    if (type) {
      conditions.push(type.sql);
      params.push(...type.params);
    }
    const where = conditions.join(' and ');
    const offset = (query.pageNumber - 1) * query.pageSize;
    const [rows, counted] = await Promise.all([
      em.execute<Record<string, unknown>[]>(
        `select f.* from media_file f where ${where} order by f.created_at desc, f.id desc limit ${query.pageSize} offset ${offset}`,
        params,
      ),
      em.execute<{ count: string }[]>(`select count(*) as count from media_file f where ${where}`, params),
    ]);
    const files = rows.map((row) => em.map(MediaFile, row));
    return { media: files.map((file) => this.view(file)), totalCount: Number(counted[0]?.count ?? 0), usedTeamStorage: team.usedStorage };
  }

  /** The folder and, when asked, all its descendants; 404 unless it is the team's. */
  private async folderIds(teamId: string, folderId: string, includeSubfolders: boolean): Promise<string[]> {
    const em = this.orm.em.fork();
    const sql = includeSubfolders
      ? `with recursive tree (id) as (
           select id from media_folder where id = ? and team_id = ?
           union all
           select c.id from media_folder c join tree on c.parent_id = tree.id where c.team_id = ?
         ) select id from tree`
      : `select id from media_folder where id = ? and team_id = ?`;
    const rows = await em.execute<{ id: string }[]>(sql, includeSubfolders ? [folderId, teamId, teamId] : [folderId, teamId]);
    if (rows.length === 0) throw notFound('folder', folderId);
    return rows.map((row) => row.id);
  }
}
