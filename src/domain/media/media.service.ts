import type { MikroORM } from '@mikro-orm/postgresql';
import { badRequest, notFound } from '../../errors/errors.ts';
import { Team } from '../teams/team.entity.ts';
import { MediaFile } from './media-file.entity.ts';
import { mediaPath, publicMediaUrl } from './media-links.ts';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;

export interface MediaListQuery {
  pageNumber: number;
  pageSize: number;
}

export interface MediaServiceOptions {
  orm: MikroORM;
  /** Base of public links: CDN_URL, or this service's own address. */
  linkBaseUrl: string;
}

/** Parses the paging headers of spec 4.4. */
export function parsePaging(pageNumberHeader: string | undefined, pageSizeHeader: string | undefined): MediaListQuery {
  const pageNumber = pageNumberHeader === undefined ? 1 : Number(pageNumberHeader);
  const pageSize = pageSizeHeader === undefined ? DEFAULT_PAGE_SIZE : Number(pageSizeHeader);
  if (!Number.isInteger(pageNumber) || pageNumber < 1 || pageNumber > 1_000_000) {
    throw badRequest('The pageNumber header must be a whole number from 1.', 'pageNumber');
  }
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    throw badRequest(`The pageSize header must be a whole number from 1 to ${MAX_PAGE_SIZE}.`, 'pageSize');
  }
  return { pageNumber, pageSize };
}

export class MediaService {
  private readonly orm: MikroORM;
  private readonly linkBaseUrl: string;

  constructor(options: MediaServiceOptions) {
    this.orm = options.orm;
    this.linkBaseUrl = options.linkBaseUrl;
  }

  view(file: MediaFile) {
    const teamId = file.team.id;
    const path = mediaPath(teamId, file.id, file.fileName);
    return {
      id: file.id,
      path,
      publicUrl: file.isPublic ? publicMediaUrl(this.linkBaseUrl, path) : null,
      public: file.isPublic,
      folderId: file.folder?.id ?? null,
      tags: file.tags,
      fileName: file.fileName,
      size: file.size,
      contentType: file.contentType,
      hash: file.hash ?? null,
      createdAt: file.createdAt.toISOString(),
      updatedAt: file.updatedAt.toISOString(),
    };
  }

  /** Newest first; ties broken by id so pages never overlap. */
  async list(teamId: string, query: MediaListQuery) {
    const em = this.orm.em.fork();
    const team = await em.findOne(Team, { id: teamId }, { fields: ['usedStorage'] });
    if (!team) throw notFound('team', teamId);
    const [files, totalCount] = await em.findAndCount(
      MediaFile,
      { team: teamId },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: query.pageSize, offset: (query.pageNumber - 1) * query.pageSize },
    );
    return { media: files.map((file) => this.view(file)), totalCount, usedTeamStorage: team.usedStorage };
  }
}
