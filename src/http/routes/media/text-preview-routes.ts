import type { MikroORM } from '@mikro-orm/postgresql';
import { Permission } from '../../../auth/permissions.ts';
import { MediaFile } from '../../../domain/media/media-file.entity.ts';
import {
  DEFAULT_PREVIEW_LINES, MAX_PREVIEW_LINES, PREVIEW_FROM, previewEncoding, readTextPreview, storeRangeReader, type PreviewFrom,
} from '../../../domain/media/text-preview.ts';
import { badRequest, notFound, unsupportedMediaType } from '../../../errors/errors.ts';
import { isStorageError, type ObjectStore } from '../../../storage/object-store.ts';
import { json, type Route } from '../../types.ts';
import { MEDIA_BASE, teamRouteBuilder, type TeamRouteDeps } from '../route-builder.ts';

export interface TextPreviewRouteDeps extends TeamRouteDeps {
  orm: MikroORM;
  /** Media bytes wherever they are (the object store or, for a small file, the database). */
  mediaContent: Pick<ObjectStore, 'read'>;
}

function linesParam(query: URLSearchParams): number {
  const raw = query.get('lines');
  if (raw === null || raw === '') return DEFAULT_PREVIEW_LINES;
  const value = /^\d{1,9}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= 1 && value <= MAX_PREVIEW_LINES)) throw badRequest(`lines must be a whole number from 1 to ${MAX_PREVIEW_LINES}.`, 'lines');
  return value;
}

function fromParam(query: URLSearchParams): PreviewFrom {
  const raw = query.get('from');
  if (raw === null || raw === '') return 'end';
  if (!(PREVIEW_FROM as readonly string[]).includes(raw)) throw badRequest(`from must be ${PREVIEW_FROM.join(' or ')}.`, 'from');
  return raw as PreviewFrom;
}

/**
 * GET /v1/cdn/media/:teamId/preview/:mediaId?lines=&from=: the first or last lines of a text file
 * (or a gzipped one), read in bounded ranges (src/domain/media/text-preview.ts; docs/api.md).
 */
export function textPreviewRoutes(deps: TextPreviewRouteDeps): Route[] {
  // Reads no body.
  const route = teamRouteBuilder(deps, 0, MEDIA_BASE);
  return [
    route('GET', '/preview/:mediaId', Permission.mediaView, async ({ request, teamId, param }) => {
      const lines = linesParam(request.query);
      const from = fromParam(request.query);
      const mediaId = param('mediaId').toLowerCase();
      const file = await deps.orm.em.fork().findOne(MediaFile, { id: mediaId, team: teamId.toLowerCase() });
      if (!file) throw notFound('media file', mediaId);
      const encoding = previewEncoding(file.contentType, file.fileName);
      if (!encoding) {
        throw unsupportedMediaType(`Only text files (text/*, JSON, or gzipped text such as .log.gz) have a preview; this file is ${file.contentType}`, file.contentType);
      }
      try {
        const preview = await readTextPreview(storeRangeReader(deps.mediaContent, file.storageKey), {
          size: file.size, encoding, lines, from, signal: request.signal,
        });
        return json(200, { id: file.id, fileName: file.fileName, contentType: file.contentType, size: file.size, from, ...preview }, { 'Cache-Control': 'no-store' });
      } catch (error) {
        if (isStorageError(error) && error.code === 'not-found') throw notFound('media file', mediaId);
        throw error;
      }
    }),
  ];
}
