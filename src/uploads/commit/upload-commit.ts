import { randomUUID } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { fileAboveSizeLimit, idempotencyInFlight, notFound, teamStorageFull } from '../../errors/errors.ts';
import type { IdempotencyClaim } from '../../domain/idempotency/idempotency-keys.ts';
import { ensureFolderPath, findFolder, findFolderPath, type FolderRef } from '../../domain/folders/folder-resolver.ts';
import type { MediaService } from '../../domain/media/media.service.ts';
import { databaseLocation } from '../../storage/storage-location.ts';
import { commitUploads, type CommitOutcome, type GroupCommit, type UploadCommitRecord } from './group-commit.ts';

/** An upload whose file is stored and whose name and type are settled: what its commit needs. */
export interface CompletedUpload {
  teamId: string;
  keyId: string | null;
  mediaId: string;
  storageKey: string;
  /** A small file's bytes, committed into the database with its row; null or absent: they are in the object store. */
  content?: Buffer | null;
  fileName: string;
  contentType: string;
  size: number;
  hash: string;
  tags: string[];
  /** Explicit visibility; null lets the folder's default, then `routeDefaultPublic`, decide (spec 3.1). */
  public: boolean | null;
  routeDefaultPublic: boolean;
  folderId: string | null;
  /** Folder path segments to find or create. */
  folderPath: string[] | null;
  /** The request's Idempotency-Key claim and what its body was: the answer is recorded with the commit. */
  idempotency?: { claim: IdempotencyClaim; fingerprint: string } | null;
}

export interface UploadCommitDeps {
  orm: MikroORM;
  media: MediaService;
  groupCommit: GroupCommit;
  /** The location of the store uploads are written to (ObjectStore.location), recorded on each row. */
  storageLocation: string;
  /** After an upload's row committed (the thumbnailer is woken for an image). */
  onCommitted?: (upload: CompletedUpload) => void;
}

/**
 * Makes a stored upload visible: resolves its folder, then commits its media
 * row, outbox event, usage and counted storage with the other uploads of its
 * team that are ready at the same time (GroupCommit). An upload whose folder
 * path does not exist yet creates it and commits in one transaction of its own.
 * Throws the refusal (402 storage or file size, 404 folder or team) when
 * nothing was written.
 */
export class UploadCommitter {
  private readonly deps: UploadCommitDeps;

  constructor(deps: UploadCommitDeps) {
    this.deps = deps;
  }

  async commit(upload: CompletedUpload) {
    // Only an upload into a folder reads anything first: an EntityManager is forked for it alone
    // (a fork costs more than the rest of a small upload's commit).
    const folder = upload.folderPath || upload.folderId ? await this.resolveFolder(upload) : null;
    if (folder && 'missingPath' in folder) return this.commitCreatingPath(upload, folder.em, folder.missingPath);
    const { record, view } = this.record(upload, folder);
    return this.answer(upload, folder, view, await this.deps.groupCommit.commit(record));
  }

  /** The upload's folder; for a path that does not exist yet, what creating it needs. */
  private async resolveFolder(upload: CompletedUpload): Promise<FolderRef | { em: EntityManager; missingPath: string[] }> {
    const em = this.deps.orm.em.fork();
    const { teamId, folderPath } = upload;
    if (!folderPath) return findFolder(em, teamId, upload.folderId!);
    // An existing folder path is read without a lock; only a missing one needs the
    // folder-creating transaction (which then commits the upload with it).
    return (await findFolderPath(em, teamId, folderPath)) ?? { em, missingPath: folderPath };
  }

  private commitCreatingPath(upload: CompletedUpload, em: EntityManager, folderPath: string[]) {
    return em.transactional(async (tx) => {
      const folder = await ensureFolderPath(tx, upload.teamId, folderPath);
      const { record, view } = this.record(upload, folder);
      const [outcome] = await commitUploads(tx, upload.teamId, [record]);
      return this.answer(upload, folder, view, outcome!);
    });
  }

  private record(upload: CompletedUpload, folder: FolderRef | null) {
    const isPublic = upload.public ?? folder?.defaultPublic ?? upload.routeDefaultPublic;
    const createdAt = new Date();
    const view = this.deps.media.recordView({
      id: upload.mediaId, teamId: upload.teamId, folderId: folder?.id ?? null, fileName: upload.fileName, isPublic, tags: upload.tags,
      size: upload.size, contentType: upload.contentType, hash: upload.hash, createdAt, updatedAt: createdAt,
    });
    const record: UploadCommitRecord = {
      mediaId: upload.mediaId, teamId: upload.teamId, folderId: folder?.id ?? null, fileName: upload.fileName, storageKey: upload.storageKey,
      storageLocation: upload.content ? databaseLocation() : this.deps.storageLocation, content: upload.content ?? null, size: upload.size, contentType: upload.contentType, hash: upload.hash, isPublic, tags: upload.tags, uploadedByKeyId: upload.keyId,
      createdAt, eventId: randomUUID(), payload: { media: view },
      idempotency: upload.idempotency
        ? { key: upload.idempotency.claim.key, claimId: upload.idempotency.claim.claimId, fingerprint: upload.idempotency.fingerprint, answer: JSON.stringify(view) }
        : null,
    };
    return { record, view };
  }

  private answer<View>(upload: CompletedUpload, folder: FolderRef | null, view: View, outcome: CommitOutcome) {
    switch (outcome.outcome) {
      case 'committed':
        this.deps.onCommitted?.(upload);
        return { ...view, usedTeamStorage: outcome.usedStorage };
      case 'over_quota':
        throw teamStorageFull({ bytes: upload.size });
      case 'too_large':
        // The limit was lowered while the file streamed (checked again at commit, on every instance).
        throw fileAboveSizeLimit(outcome.maxFileBytes, { bytes: upload.size });
      case 'folder_gone':
        throw notFound('folder', folder?.id ?? upload.folderId ?? '');
      case 'team_gone':
        throw notFound('team', upload.teamId);
      case 'claim_lost':
        // Its key was taken over as stale (its instance looked gone): the request running under it now stores the file.
        throw idempotencyInFlight();
    }
  }
}
