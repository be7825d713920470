import type { MikroORM } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.ts';
import { findFolder } from '../domain/folders/folder-resolver.ts';
import type { UploadCommitter } from '../domain/uploads/upload-commit.ts';
import { badRequest, unsupportedMediaType } from '../errors/errors.ts';
import { checkNameAndType, resolveContentType } from '../media/file-type.ts';
import { refusalAtFileStart } from './file-refusal.ts';
import type { FileStart } from './parsers/body-parser.ts';
import type { ReceivedFile } from './upload-actor.ts';
import { parseFileName, parseJsonOptions, type UploadOptions } from './upload-options.ts';
import type { UploadRoute } from './upload-service.ts';
import type { StoredUpload, UploadTarget } from './upload-target.ts';

export function storageKeyOf(teamId: string, mediaId: string): string {
  return `media/${teamId}/${mediaId}`;
}

type MediaCreated = Awaited<ReturnType<UploadCommitter['commit']>>;

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
    return (stored: StoredUpload) =>
      this.committer.commit({
        teamId: principal.teamId, keyId: principal.keyId, mediaId: stored.id, storageKey: stored.storageKey, fileName, contentType, size: received.size,
        hash: received.hash, tags: options.tags, public: options.public, routeDefaultPublic: route === 'multipart', folderId: options.folderId,
        folderPath: options.folderPath,
      });
  }
}
