import type { MikroORM } from '@mikro-orm/postgresql';
import type { Principal } from '../../auth/principal.ts';
import { findFolder } from '../../domain/folders/folder-resolver.ts';
import { fingerprintOf } from '../idempotency/idempotency-key.ts';
import type { IdempotencyClaim } from '../../domain/idempotency/idempotency-keys.ts';
import type { UploadCommitter } from '../commit/upload-commit.ts';
import { badRequest, unsupportedMediaType } from '../../errors/errors.ts';
import { checkNameAndType, resolveContentType } from '../../domain/file-types.ts';
import { refusalAtFileStart } from '../options/file-refusal.ts';
import type { FileStart } from '../parsers/body-parser.ts';
import type { ReceivedFile } from '../receive/upload-actor.ts';
import { parseFileName } from '../../domain/file-names.ts';
import { parseJsonOptions, type UploadOptions } from '../options/upload-options.ts';
import type { UploadRoute } from '../receive/upload-service.ts';
import type { StoredUpload, UploadTarget } from './upload-target.ts';

export function storageKeyOf(teamId: string, mediaId: string): string {
  return `media/${teamId}/${mediaId}`;
}

type MediaCreated = Awaited<ReturnType<UploadCommitter['commit']>>;

/** A media file upload's target (its options known before the body: multipart query, an upload URL's; null for JSON). */
export function mediaTarget(
  deps: { orm: MikroORM; mediaCommitter: UploadCommitter }, principal: Principal, route: UploadRoute, options: UploadOptions | null,
): MediaUploadTarget {
  return new MediaUploadTarget({ orm: deps.orm, committer: deps.mediaCommitter }, principal, route, options);
}

/** What a complete upload settles on: the stored name and type, and its options. */
interface SettledUpload {
  options: UploadOptions;
  fileName: string;
  contentType: string;
}

/**
 * What an upload's body asked for, as compared between an idempotent request and its retry: the
 * route, the stored name and type, the options, and the content (its xxh64 and size). Two bodies
 * framed differently (another multipart boundary, another JSON member order) that carry the same
 * file and options are the same request.
 */
export function uploadFingerprint(route: UploadRoute, settled: SettledUpload, received: Pick<ReceivedFile, 'size' | 'hash'>): string {
  const { options, fileName, contentType } = settled;
  return fingerprintOf({
    route, fileName, contentType, size: received.size, hash: received.hash,
    public: options.public, tags: options.tags, folderId: options.folderId, folderPath: options.folderPath,
    // Only when given, so that the fingerprints of requests without it are what they were before the option.
    ...(options.stripMetadata === null ? {} : { stripMetadata: options.stripMetadata }),
  });
}

/** A media file (spec 4.2, 4.3): options from the query (multipart) or the JSON members, committed by the group commit. */
export class MediaUploadTarget implements UploadTarget<MediaCreated> {
  private readonly principal: Principal;
  private readonly route: UploadRoute;
  /** The multipart route's query options; null for JSON, whose options arrive with the body. */
  private readonly options: UploadOptions | null;
  private readonly committer: UploadCommitter;
  private readonly orm: MikroORM;

  constructor(deps: { orm: MikroORM; committer: UploadCommitter }, principal: Principal, route: UploadRoute, options: UploadOptions | null) {
    this.orm = deps.orm;
    this.committer = deps.committer;
    this.principal = principal;
    this.route = route;
    this.options = options;
  }

  readonly keepsSmallFilesInDatabase = true;

  get fileName(): string | null {
    return this.options?.fileName ?? null;
  }

  storageKey(teamId: string, fileId: string): string {
    return storageKeyOf(teamId, fileId);
  }

  async beforeBody(): Promise<void> {
    if (this.options?.folderId) await findFolder(this.orm.em.fork(), this.principal.teamId, this.options.folderId);
  }

  checkFile(file: FileStart) {
    return refusalAtFileStart(this.options, file);
  }

  accept(received: ReceivedFile) {
    const options = this.options ?? parseJsonOptions(received.fields);
    const fileName = options.fileName ?? (received.file.fileName ? parseFileName(received.file.fileName, 'file name') : null);
    if (!fileName) throw badRequest('The file has no name; give fileName', 'fileName');
    const blocked = checkNameAndType(fileName, received.file.declaredType);
    if (blocked) throw unsupportedMediaType(`Blocked file type: ${blocked}`, blocked);
    const contentType = resolveContentType(received.sniffedType, received.file.declaredType, fileName);
    const { principal, route } = this;
    const fingerprint = () => uploadFingerprint(route, { options, fileName, contentType }, received);
    return {
      contentType,
      fingerprint,
      stripMetadata: options.stripMetadata,
      commit: (stored: StoredUpload, claim: IdempotencyClaim | null) =>
        this.committer.commit({
          teamId: principal.teamId, keyId: principal.keyId, mediaId: stored.id, storageKey: stored.storageKey, content: stored.content ?? null, fileName, contentType,
          size: stored.stripped?.size ?? received.size, hash: stored.stripped?.hash ?? received.hash, tags: options.tags, public: options.public, routeDefaultPublic: route !== 'json', folderId: options.folderId,
          folderPath: options.folderPath, idempotency: claim && { claim, fingerprint: fingerprint() },
        }),
    };
  }
}
