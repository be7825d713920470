import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../../../config/config.ts';
import { Permission } from '../../../auth/permissions.ts';
import { MediaFile } from '../../../domain/media/media-file.entity.ts';
import {
  canonicalTransformQuery, parseTransform, resolveTransform, signedTransformPath, transformFileName, type TransformRequest,
} from '../../../domain/media/image-transform-params.ts';
import { cacheTagHeaders } from '../../../domain/media/cache-tags.ts';
import { mediaFilePart, mediaPath, publicMediaUrl } from '../../../domain/media/media-links.ts';
import { uploaderOf } from '../../../domain/media/media-uploader.ts';
import type { ServedTrafficCounter } from '../../../domain/media/served-traffic.ts';
import type { SignedLinks } from '../../../domain/media/signed-links.ts';
import { THUMBNAIL_CONTENT_TYPE, thumbnailPath, thumbnailStorageKey } from '../../../domain/media/thumbnail-links.ts';
import { isUuid } from '../../../domain/validation.ts';
import { forbidden, notFound } from '../../../errors/errors.ts';
import type { ImageTransformer } from '../../../previews/image-transformer.ts';
import type { DatabaseFirstStore } from '../../../storage/db/database-first-store.ts';
import { isStorageError, type ObjectStore } from '../../../storage/object-store.ts';
import { json, type HttpRequest, type HttpResult, type Route } from '../../types.ts';
import { MEDIA_BASE, publicRouteBuilder, teamRouteBuilder, type TeamRouteDeps } from '../route-builder.ts';

export interface FileServingRouteDeps extends TeamRouteDeps {
  orm: MikroORM;
  /** Thumbnails. */
  store: Pick<ObjectStore, 'read'>;
  /** Media bytes at the location their row records (the object store or, for a small file, the database). */
  mediaContent: Pick<DatabaseFirstStore, 'readAt'>;
  /** Signs and checks private files' links (the composition root gives it the operator secret). */
  fileLinks: SignedLinks;
  /** Resized images (`?w=&h=&fit=&format=&q=` on a file's link). */
  transformer: Pick<ImageTransformer, 'get' | 'countRefused'>;
}

/** Public files never change under their key (renames do not move bytes), so caches may keep them for a year. */
const PUBLIC_CACHE_CONTROL = 'public, max-age=31536000, immutable';

/**
 * How an answer of a file (or its thumbnail or a resized image) may be cached: a public one by
 * anyone for a year under its cache tags, a signed one by the client until the link expires.
 */
function cachingHeaders(file: MediaFile, etag: string, signedSecondsLeft: number | null): Record<string, string> {
  if (signedSecondsLeft !== null) return { ETag: etag, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': `private, max-age=${signedSecondsLeft}` };
  return { ETag: etag, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': PUBLIC_CACHE_CONTROL, ...cacheTagHeaders(file.team.id, file.id) };
}
/** `<uuid>.webp`: a thumbnail's file part (thumbnail-links.ts). */
const THUMBNAIL_PART_PATTERN = /^([0-9a-fA-F-]{36})\.webp$/;
/** `<uuid>` or `<uuid>.<ext>`: the only file parts links are ever built with (media-links.ts). */
const FILE_PART_PATTERN = /^([0-9a-fA-F-]{36})(?:\.[a-z0-9]{1,10})?$/;

/**
 * Content types a browser may render inline. Everything else is sent as an
 * attachment so that a stored file can never run as a page of this origin;
 * SVG is an image that can carry script, so it is not on the list.
 */
export function isInlineType(contentType: string): boolean {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type === 'image/svg+xml') return false;
  return /^(image|video|audio)\/[a-z0-9.+-]+$/.test(type) || type === 'application/pdf' || type === 'text/plain';
}

/** `inline` or `attachment` with the user's file name, made safe for a header. */
export function contentDisposition(contentType: string, fileName: string): string {
  const disposition = isInlineType(contentType) ? 'inline' : 'attachment';
  // Cut at 200 UTF-16 units, without leaving half of a surrogate pair (encodeURIComponent throws on one: a 500 before).
  const cleaned = fileName.replace(/[\u0000-\u001f\u007f"\\/]/g, '').trim().slice(0, 200).replace(/[\ud800-\udbff]$/, '') || 'file';
  const ascii = cleaned.replace(/[^A-Za-z0-9._ ()-]/g, '_');
  const encoded = encodeURIComponent(cleaned).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${disposition}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

export type RangeRequest =
  | { kind: 'none' }
  | { kind: 'range'; start: number; end: number }
  | { kind: 'unsatisfiable' };

/**
 * One `Range: bytes=...` header against a file of `size` bytes (RFC 9110 14.1.2):
 * `a-b`, `a-` and `-n`. A header that is not a byte range is ignored (the whole
 * file); several ranges and ranges outside the file are unsatisfiable (416).
 */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (header === undefined) return { kind: 'none' };
  const match = /^\s*bytes\s*=\s*(.*)$/i.exec(header);
  if (!match) return { kind: 'none' };
  const specs = match[1]!.split(',').map((part) => part.trim()).filter((part) => part.length > 0);
  if (specs.length !== 1) return specs.length === 0 ? { kind: 'none' } : { kind: 'unsatisfiable' };
  const spec = /^(\d{0,15})-(\d{0,15})$/.exec(specs[0]!);
  if (!spec || (spec[1] === '' && spec[2] === '')) return { kind: 'none' };
  if (spec[1] === '') {
    const suffix = Number(spec[2]);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'range', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(spec[1]);
  const last = spec[2] === '' ? null : Number(spec[2]);
  if (last !== null && last < start) return { kind: 'none' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'range', start, end: Math.min(last ?? size - 1, size - 1) };
}

/** True when one of the If-None-Match entity tags matches (weak comparison, RFC 9110 13.1.2). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const bare = etag.replace(/^W\//, '');
  return ifNoneMatch.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === bare);
}

/** Iterates nothing: the body of a HEAD answer, whose length is only announced. */
const EMPTY_BODY: AsyncIterable<Buffer> = { async *[Symbol.asyncIterator]() {} };

/**
 * Spec 4.5 and the files themselves:
 * - GET /v1/cdn/media/:teamId/:mediaId → `{url, uploadedBy}`: the public link for a public
 *   file, a link signed for one hour for a private one, and the key that uploaded it;
 * - GET/HEAD /media/team/:teamId/:file: serves the bytes, streamed from storage.
 *   No API key and no rate limit (a CDN pulls from here as its origin).
 *
 * Access to `/media/team/...`: a public file to anyone. A request carrying
 * `expires`/`signature` must carry a valid, unexpired signature for exactly
 * this path (403 otherwise, checked before the database is asked, so a 403
 * says nothing about whether the file exists). A private file without a
 * signature answers 404, the same as a file that does not exist, so private
 * ids are never confirmed.
 *
 * Any of `w`, `h`, `fit`, `format`, `q` on a file's link asks for the image resized
 * (image-transform-params.ts, ImageTransformer); a signed link of a resized private image
 * signs the path with the canonical transform query, so a signature of the file does not
 * pass for a transform, nor one transform's for another. The link route takes the same
 * parameters and answers such a link.
 *
 * With `servedTraffic`, every 200, 206 and 304 answer (GET or HEAD) counts as
 * one request of the file's team, and the body bytes sent count as traffic
 * (ServedTrafficCounter.countBody); refusals (403, 404, 416) are not counted.
 */
export function fileServingRoutes(
  services: FileServingRouteDeps,
  config: Pick<Config, 'cdnUrl' | 'publicUrl'>,
  options: { servedTraffic?: ServedTrafficCounter } = {},
): Route[] {
  const traffic = options.servedTraffic;
  const links = services.fileLinks;
  const publicBase = config.cdnUrl ?? config.publicUrl;

  const findFile = async (teamId: string, mediaId: string, em = services.orm.em.fork()): Promise<MediaFile | null> => {
    if (!isUuid(teamId) || !isUuid(mediaId)) return null;
    return em.findOne(MediaFile, { id: mediaId.toLowerCase(), team: teamId.toLowerCase() });
  };

  // Reads no body.
  const route = teamRouteBuilder(services, 0, MEDIA_BASE);
  const publicRoute = publicRouteBuilder();

  /** The transform a file link's query asks for (null: none); a refusal (400) is counted. */
  const transformOf = (query: URLSearchParams): TransformRequest | null => {
    try {
      return parseTransform(query);
    } catch (error) {
      services.transformer.countRefused();
      throw error;
    }
  };

  const linkRoute = route('GET', '/:mediaId', Permission.mediaView, async (call) => {
    const mediaId = call.param('mediaId');
    const transform = parseTransform(call.request.query);
    const em = services.orm.em.fork();
    const file = await findFile(call.teamId, mediaId, em);
    if (!file) throw notFound('media file', mediaId);
    const path = mediaPath(call.teamId, file.id, file.fileName);
    if (transform) {
      // 400 for a file that is not an image: the link would only ever answer that.
      resolveTransform(transform, file.contentType);
      const query = canonicalTransformQuery(transform);
      const url = file.isPublic
        ? `${publicMediaUrl(publicBase, path)}?${query}`
        : `${publicMediaUrl(config.publicUrl, path)}?${query}&${links.sign(signedTransformPath(path, transform)).slice(1)}`;
      return json(200, { url, uploadedBy: await uploaderOf(em, file) }, { 'Cache-Control': 'no-store' });
    }
    const url = file.isPublic ? publicMediaUrl(publicBase, path) : `${publicMediaUrl(config.publicUrl, path)}${links.sign(path)}`;
    return json(200, { url, uploadedBy: await uploaderOf(em, file) }, { 'Cache-Control': 'no-store' });
  });

  /** Seconds left of a valid signature for `path`; null: none given; 403 for a wrong or expired one. */
  const signedSecondsLeftOf = (request: HttpRequest, path: string): number | null => {
    const expires = request.query.get('expires');
    const signature = request.query.get('signature');
    if (expires === null && signature === null) return null;
    const check = links.verify(path, expires, signature);
    if (!check.valid) throw forbidden(check.reason === 'expired' ? 'The signed link has expired' : 'The signed link is not valid');
    return check.secondsLeft;
  };

  const serveFile = async (request: HttpRequest): Promise<HttpResult> => {
    const teamId = request.params['teamId']!;
    const filePart = request.params['file']!;
    const path = `media/team/${teamId}/${filePart}`;
    const transform = transformOf(request.query);
    const signedSecondsLeft = signedSecondsLeftOf(request, transform ? signedTransformPath(path, transform) : path);
    const idMatch = FILE_PART_PATTERN.exec(filePart);
    const file = idMatch ? await findFile(teamId, idMatch[1]!) : null;
    // The file part must be exactly the one links are built with (same id, same extension).
    if (!file || mediaFilePart(file.id, file.fileName) !== filePart || file.team.id !== teamId) throw notFound('media file');
    if (!file.isPublic && signedSecondsLeft === null) throw notFound('media file');
    if (transform) return serveTransform(request, file, transform, signedSecondsLeft);

    const etag = `"${file.hash ?? file.id}"`;
    const size = file.size;
    const headers: Record<string, string> = { ...cachingHeaders(file, etag, signedSecondsLeft), 'Accept-Ranges': 'bytes' };
    if (etagMatches(request.headers['if-none-match'], etag)) {
      traffic?.countRequest(file.team.id);
      // No body, but the length a 200 would have (the server announces it as Content-Length).
      return { status: 304, headers, stream: { body: EMPTY_BODY, length: size } };
    }
    const range = parseRange(request.headers['range'], size);
    if (range.kind === 'unsatisfiable') {
      return { status: 416, headers: { ...headers, 'Content-Range': `bytes */${size}` } };
    }
    headers['Content-Type'] = file.contentType;
    headers['Content-Disposition'] = contentDisposition(file.contentType, file.fileName);
    const start = range.kind === 'range' ? range.start : 0;
    const end = range.kind === 'range' ? range.end : size - 1;
    const length = size === 0 ? 0 : end - start + 1;
    const status = range.kind === 'range' ? 206 : 200;
    if (range.kind === 'range') headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
    if (request.method === 'HEAD' || length === 0) {
      traffic?.countRequest(file.team.id);
      return { status, headers, stream: { body: EMPTY_BODY, length } };
    }

    let body;
    try {
      body = await services.mediaContent.readAt(file.storageLocation ?? null, file.storageKey, range.kind === 'range' ? { start, end } : undefined);
    } catch (error) {
      if (isStorageError(error) && error.code === 'not-found') throw notFound('media file');
      throw error;
    }
    if (request.signal.aborted) {
      (body as { destroy?: () => void }).destroy?.();
      return { status, headers };
    }
    let streamed = body as AsyncIterable<Buffer> & { destroy?(): void };
    if (traffic) {
      traffic.countRequest(file.team.id);
      streamed = traffic.countBody(file.team.id, streamed, request.signal);
    }
    return { status, headers, stream: { body: streamed, length } };
  };

  /** The file resized (ImageTransformer), once its access was checked: the file's caching rules, an ETag per variant. */
  const serveTransform = async (request: HttpRequest, file: MediaFile, transform: TransformRequest, signedSecondsLeft: number | null): Promise<HttpResult> => {
    let resolved;
    try {
      resolved = resolveTransform(transform, file.contentType);
    } catch (error) {
      services.transformer.countRefused();
      throw error;
    }
    const etag = `"${file.hash ?? file.id}-${resolved.variant}"`;
    const headers = cachingHeaders(file, etag, signedSecondsLeft);
    // The variant's bytes follow from the file's content and the parameters: no need to look for them.
    if (etagMatches(request.headers['if-none-match'], etag)) {
      traffic?.countRequest(file.team.id);
      return { status: 304, headers };
    }
    const source = { id: file.id, teamId: file.team.id, storageKey: file.storageKey, size: file.size };
    const image = await services.transformer.get(source, resolved, { withBody: request.method !== 'HEAD' });
    headers['Content-Type'] = resolved.contentType;
    headers['Content-Disposition'] = contentDisposition(resolved.contentType, transformFileName(file.fileName, resolved.format));
    traffic?.countRequest(file.team.id);
    if (!image.body || request.method === 'HEAD') {
      image.body?.destroy?.();
      return { status: 200, headers, stream: { body: EMPTY_BODY, length: image.size } };
    }
    if (request.signal.aborted) {
      image.body.destroy?.();
      return { status: 200, headers };
    }
    return { status: 200, headers, stream: { body: traffic ? traffic.countBody(file.team.id, image.body, request.signal) : image.body, length: image.size } };
  };

  /** A media file's thumbnail (src/previews): the file's access rules, its own small WebP bytes. */
  const serveThumbnail = async (request: HttpRequest): Promise<HttpResult> => {
    const teamId = request.params['teamId']!;
    const filePart = request.params['file']!;
    const path = `media/team/${teamId}/thumbnails/${filePart}`;
    const signedSecondsLeft = signedSecondsLeftOf(request, path);
    const idMatch = THUMBNAIL_PART_PATTERN.exec(filePart);
    const file = idMatch ? await findFile(teamId, idMatch[1]!) : null;
    if (!file || file.thumbnailStatus !== 'ready' || thumbnailPath(file.team.id, file.id) !== path) throw notFound('thumbnail');
    if (!file.isPublic && signedSecondsLeft === null) throw notFound('thumbnail');
    const etag = `"${file.hash ?? file.id}-thumbnail"`;
    const headers = cachingHeaders(file, etag, signedSecondsLeft);
    const length = file.thumbnailSize ?? 0;
    traffic?.countRequest(file.team.id);
    if (etagMatches(request.headers['if-none-match'], etag)) return { status: 304, headers, stream: { body: EMPTY_BODY, length } };
    headers['Content-Type'] = THUMBNAIL_CONTENT_TYPE;
    if (request.method === 'HEAD') return { status: 200, headers, stream: { body: EMPTY_BODY, length } };
    let body;
    try {
      body = await services.store.read(thumbnailStorageKey(file.team.id, file.id));
    } catch (error) {
      if (isStorageError(error) && error.code === 'not-found') throw notFound('thumbnail');
      throw error;
    }
    const streamed = body as AsyncIterable<Buffer> & { destroy?(): void };
    return { status: 200, headers, stream: { body: traffic ? traffic.countBody(file.team.id, streamed, request.signal) : streamed, length } };
  };

  return [
    linkRoute,
    // HEAD reaches the same handler (the router answers HEAD with a GET route).
    publicRoute('GET', '/media/team/:teamId/:file', ({ request }) => serveFile(request)),
    publicRoute('GET', '/media/team/:teamId/thumbnails/:file', ({ request }) => serveThumbnail(request)),
  ];
}
