import { randomUUID } from 'node:crypto';
import { newMediaId } from '../../domain/media/media-id.ts';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Principal } from '../../auth/principal.ts';
import { makerOf, type UploadMaker } from '../../auth/upload-maker.ts';
import { findFolder } from '../../domain/folders/folder-resolver.ts';
import type { TeamStateCache } from '../../domain/teams/team-state-cache.ts';
import { TusUploadRepository, type TusUploadRow } from './tus-upload.repository.ts';
import type { StorageQuota } from '../quota/storage-quota.ts';
import type { UploadCommitter } from '../commit/upload-commit.ts';
import {
  conflict, fileAboveSizeLimit, notFound, payloadTooLarge, serviceUnavailable, teamStorageFull, tusUploadComplete, tusUploadRevoked,
  unsupportedMediaType, uploadLocked, uploadOffsetConflict,
} from '../../errors/errors.ts';
import type { XxHashApi } from '../hashing/content-hash.ts';
import { checkNameAndType, resolveContentType } from '../../domain/file-types.ts';
import { MAX_SNIFF_BYTES, sniffContent } from '../sniffing/sniff-content.ts';
import { ServiceError } from '../../errors/service-error.ts';
import { StorageError, type ObjectStore } from '../../storage/object-store.ts';
import type { ResumableProgress, ResumableStore, ResumableUpload } from '../../storage/resumable-store.ts';
import { InlineContentHasher } from '../hashing/content-hasher.ts';
import type { UploadBody } from '../receive/upload-body.ts';
import type { MetadataStripper } from '../metadata/metadata-stripper.ts';
import { storageKeyOf } from '../targets/media-upload-target.ts';
import { bodyChunks } from './body-chunks.ts';
import { parseTusMetadata } from './tus-metadata.ts';

/** A PATCH holds its upload's lease this long and renews it every third of it; a crashed holder's lease runs out after it. */
export const TUS_LEASE_MS = 30_000;

/** What the metrics see of tus uploads (src/observability adapts it). */
export interface TusObserver {
  /** A PATCH started (+1) or ended (-1) receiving bytes on this instance. */
  receiving(delta: 1 | -1): void;
  /** Bytes stored by a PATCH that started at a non-zero offset (a resumed upload). */
  resumedBytes(bytes: number): void;
  completed(): void;
}

export interface TusServiceDeps {
  orm: MikroORM;
  store: ObjectStore;
  resumable: ResumableStore;
  /** A quota without an owner: tus reservations outlive the instance that made them (see CrashSweeper). */
  quota: StorageQuota;
  teamStates: TeamStateCache;
  committer: UploadCommitter;
  /** Strips an upload's image once its bytes are complete, when it or its team asks for it. */
  stripper: MetadataStripper;
  xxhash: XxHashApi;
  /** An unfinished upload untouched this long expires (Upload-Expires) and is swept. */
  expirySeconds: number;
  /** Largest Upload-Length (Tus-Max-Size); 413 beyond. */
  maxSize: number;
  /** Whether the key or session that created an upload may still upload to its team (auth/upload-maker.ts). */
  makerMayUpload: (teamId: string, maker: UploadMaker) => Promise<boolean>;
  observer?: TusObserver;
}

export interface TusCreateRequest {
  length: number;
  metadata: string | undefined;
}

export interface TusPatchResult {
  offset: number;
  /** Set once the upload became a media file. */
  mediaId: string | null;
  expiresAt: Date | null;
}

/**
 * Resumable uploads (tus 1.0.0): creation with the same validation and quota checks as the upload
 * routes, PATCHes that append under a per-upload lease held in PostgreSQL (so two instances never
 * append to one upload at once), and completion through the same commit as every other upload.
 */
export class TusService {
  private readonly deps: TusServiceDeps;
  readonly uploads: TusUploadRepository;

  constructor(deps: TusServiceDeps) {
    this.deps = deps;
    this.uploads = new TusUploadRepository({ orm: deps.orm });
  }

  get expirySeconds(): number {
    return this.deps.expirySeconds;
  }

  get maxSize(): number {
    return this.deps.maxSize;
  }

  private expiryFrom(now = Date.now()): Date {
    return new Date(now + this.deps.expirySeconds * 1000);
  }

  /**
   * Validates everything the headers decide, in the upload routes' order (400 metadata, 413 route
   * limit, 402 file size, 415 name or declared type, 404 folder, 402 storage), reserves
   * `Upload-Length` and prepares the storage. Nothing is left behind by a refusal.
   */
  async create(principal: Principal, request: TusCreateRequest): Promise<TusUploadRow> {
    const { teamId } = principal;
    const options = parseTusMetadata(request.metadata);
    if (request.length > this.deps.maxSize) throw payloadTooLarge(this.deps.maxSize);
    const team = await this.deps.teamStates.fresh(teamId);
    const maxFile = team.limits.maxMediaFileSize;
    if (maxFile !== null && request.length > maxFile) {
      throw fileAboveSizeLimit(maxFile, { bytes: request.length });
    }
    const blocked = checkNameAndType(options.fileName, options.declaredType);
    if (blocked) throw unsupportedMediaType(`Blocked file type: ${blocked}`, blocked);
    if (options.folderId) await findFolder(this.deps.orm.em.fork(), teamId, options.folderId);

    const id = newMediaId();
    const storageKey = storageKeyOf(teamId, id);
    // An empty file reserves nothing (reserve() answers the bytes it added: 0 would read as a refusal).
    if (request.length > 0 && !(await this.deps.quota.reserve(teamId, id, storageKey, request.length))) {
      throw teamStorageFull({ bytes: request.length }, team.limits.maxTeamStorage);
    }
    let progress: ResumableProgress | null = null;
    try {
      progress = await this.deps.resumable.begin({ id, key: storageKey });
      const row = {
        id, teamId, keyId: principal.keyId, maker: makerOf(principal), storageKey, length: request.length, metadata: request.metadata ?? '', options,
        multipartId: progress.multipartId, expiresAt: this.expiryFrom(),
      };
      await this.uploads.insert(row);
      return { ...row, offset: 0, head: Buffer.alloc(0), sniffed: false, sniffedType: null, partCount: 0, tailBytes: 0, completedAt: null };
    } catch (error) {
      if (progress) await this.deps.resumable.discard({ id, key: storageKey, ...progress }).catch(() => undefined);
      await this.deps.quota.release(id);
      throw storageFailure(error);
    }
  }

  async find(teamId: string, id: string): Promise<TusUploadRow> {
    const row = await this.uploads.find(teamId, id);
    if (!row || (row.completedAt === null && row.expiresAt.getTime() <= Date.now())) throw notFound('upload', id);
    return row;
  }

  /**
   * HEAD: the upload's state. An upload whose bytes are all stored but which is not complete (its
   * completion failed on storage or the database being unreachable) is completed here: tus clients
   * take `Upload-Offset == Upload-Length` for done and would never send the PATCH that completes it.
   * While another request holds it, 423 (clients retry).
   */
  async status(teamId: string, id: string): Promise<TusUploadRow> {
    const row = await this.find(teamId, id);
    if (row.completedAt || row.offset < row.length) return row;
    const token = randomUUID();
    const claimed = await this.uploads.claim(teamId, id, token, TUS_LEASE_MS);
    if (!claimed) throw uploadLocked(id);
    let completed = false;
    try {
      if (!claimed.completedAt) {
        await this.ensureMakerMayUpload(claimed);
        await this.complete(claimed);
      }
      completed = true;
    } finally {
      if (!completed) await this.uploads.release(id, token).catch(() => undefined);
    }
    return this.find(teamId, id);
  }

  /**
   * Appends the body at `offset`. Bytes that arrived before the client left are kept (the
   * progress is recorded and the lease given back); the last byte completes the upload.
   */
  async patch(teamId: string, id: string, offset: number, body: UploadBody): Promise<TusPatchResult> {
    const token = randomUUID();
    const row = await this.uploads.claim(teamId, id, token, TUS_LEASE_MS);
    if (!row) {
      await this.find(teamId, id); // 404 when it does not exist
      throw uploadLocked(id);
    }
    let completed = false;
    try {
      if (row.completedAt) {
        // tus 1.0.0: an offset that does not match MUST answer 409. At the right offset, the upload still
        // takes no more bytes: 403, the status tus gives a PATCH to an upload that cannot take any (the
        // concatenation extension's final upload). See docs/resumable-uploads.md.
        if (offset !== row.offset) throw uploadOffsetConflict(row.offset);
        throw tusUploadComplete(id);
      }
      if (row.expiresAt.getTime() <= Date.now()) throw notFound('upload', id);
      await this.ensureMakerMayUpload(row);
      if (offset !== row.offset) throw uploadOffsetConflict(row.offset);
      if (body.declaredLength !== null && offset + body.declaredLength > row.length) throw payloadTooLarge(row.length - offset);
      // All bytes already stored (a completion that failed after them): only the completion is left to do.
      const progress = row.offset < row.length ? await this.receive(row, token, body) : row;
      if (progress.offset < row.length) return { offset: progress.offset, mediaId: null, expiresAt: this.expiryFrom() };
      // Asked again: the maker may have lost access while this PATCH's bytes came in.
      if (progress !== row) await this.ensureMakerMayUpload(row);
      const mediaId = await this.complete({ ...row, ...progress });
      completed = true;
      return { offset: progress.offset, mediaId, expiresAt: null };
    } finally {
      if (!completed) await this.uploads.release(id, token).catch(() => undefined);
    }
  }

  /**
   * An upload acts for the key or session that created it: once that maker could no longer upload,
   * the upload is terminated at once (its bytes and its reservation go, as with DELETE) and 403
   * answered. It could never complete anyway, and its reservation would hold the team's storage
   * until it expired. Called holding the upload's lease.
   */
  private async ensureMakerMayUpload(row: TusUploadRow): Promise<void> {
    if (await this.deps.makerMayUpload(row.teamId, row.maker)) return;
    await this.discard(row);
    throw tusUploadRevoked(row.id);
  }

  /**
   * Streams the body into storage; answers the recorded progress with the sniff as recorded (also
   * when the client left: then it throws after recording).
   */
  private async receive(
    row: TusUploadRow, token: string, body: UploadBody,
  ): Promise<ResumableProgress & Pick<TusUploadRow, 'sniffed' | 'sniffedType'>> {
    const { resumable, observer } = this.deps;
    const upload: ResumableUpload = { ...row, id: row.id, key: row.storageKey };
    let head = row.head;
    let sniffed = row.sniffed;
    let sniffedType = row.sniffedType;
    const sniffLength = Math.min(MAX_SNIFF_BYTES, row.length);
    const record = async (progress: ResumableProgress) => {
      const recorded = await this.uploads.recordProgress(row.id, token, {
        // The head never holds more than was stored: a chunk that failed to store is sent again on resume.
        ...progress, head: sniffed ? Buffer.alloc(0) : head.subarray(0, Math.min(head.length, progress.offset)), sniffed, sniffedType,
        expiresAt: this.expiryFrom(),
      });
      if (!recorded) throw serviceUnavailable('The upload was taken over by another request; retry', 1);
    };
    let blocked: Error | null = null;
    let leaseLost = false;
    const renew = setInterval(() => {
      this.uploads.extend(row.id, token, TUS_LEASE_MS).then((held) => {
        if (!held) leaseLost = true;
      }, () => undefined);
    }, TUS_LEASE_MS / 3);
    renew.unref();
    const appender = await resumable.append(upload, record).catch((error: unknown) => {
      clearInterval(renew);
      throw storageFailure(error);
    });
    observer?.receiving(1);
    let received = 0;
    let failure: unknown = null;
    try {
      for await (const chunk of bodyChunks(body)) {
        if (leaseLost) throw serviceUnavailable('The upload was taken over by another request; retry', 1);
        if (row.offset + received + chunk.length > row.length) throw payloadTooLarge(row.length - row.offset);
        if (!sniffed) {
          head = Buffer.concat([head, chunk.subarray(0, sniffLength - head.length)]);
          if (head.length >= sniffLength) {
            const sniff = sniffContent(head);
            if (sniff.blocked) {
              blocked = unsupportedMediaType(`Blocked file type: ${sniff.blocked}`, sniff.blocked);
              break;
            }
            sniffed = true;
            sniffedType = sniff.contentType;
          }
        }
        await appender.write(chunk);
        received += chunk.length;
      }
    } catch (error) {
      failure = error;
    } finally {
      clearInterval(renew);
      observer?.receiving(-1);
      if (row.offset > 0 && received > 0) observer?.resumedBytes(received);
    }
    if (blocked) {
      await appender.abandon();
      await this.discard(row);
      throw blocked;
    }
    // Whatever arrived is kept, also when the client left or storage failed: the client resumes from the recorded offset.
    let progress: ResumableProgress;
    try {
      progress = await appender.settle();
      await record(progress);
    } catch (error) {
      throw failure ?? storageFailure(error);
    }
    if (failure) throw storageFailure(failure);
    // The completion's type (and whether its metadata can be stripped) is the sniff of this PATCH when it made it.
    return { ...progress, sniffed, sniffedType };
  }

  /**
   * The stored bytes become the object under the key, its hash is taken by reading it back once
   * (the per-request hash state cannot follow an upload across requests and instances), and the
   * commit makes it a media file. A refused commit (limits lowered meanwhile, folder gone) removes
   * the upload.
   */
  private async complete(row: TusUploadRow): Promise<string> {
    const { store, resumable, committer } = this.deps;
    const upload: ResumableUpload = { ...row, id: row.id, key: row.storageKey };
    try {
      // A crash after the commit but before the row said so: the media file exists already.
      if (await this.uploads.mediaExists(row.id)) {
        await this.uploads.markCompleted(row.id, this.expiryFrom());
        return row.id;
      }
      // A crash after the object was completed but before the commit leaves the object in place.
      if (!(await store.stat(row.storageKey))) await resumable.complete(upload);
      const { options } = row;
      const { size, hash } = await this.storedContent(row);
      const contentType = resolveContentType(row.sniffedType, options.declaredType, options.fileName);
      const created = await committer.commit({
        teamId: row.teamId, keyId: row.keyId, mediaId: row.id, storageKey: row.storageKey, fileName: options.fileName, contentType, size,
        hash, tags: options.tags, public: options.public, routeDefaultPublic: true, folderId: options.folderId, folderPath: options.folderPath,
      });
      await this.uploads.markCompleted(row.id, this.expiryFrom());
      this.deps.teamStates.noteUsedStorage(row.teamId, created.usedTeamStorage);
      this.deps.observer?.completed();
      return row.id;
    } catch (error) {
      // Refused by the commit (limits lowered meanwhile, folder gone) or storage that lost bytes: the upload
      // cannot complete and goes. Anything else (storage or database unreachable) keeps it: the next PATCH completes it.
      if (error instanceof ServiceError || (error instanceof StorageError && error.code !== 'unavailable')) {
        await store.remove(row.storageKey).catch(() => undefined);
        await this.discard(row);
      }
      throw storageFailure(error);
    }
  }

  /**
   * The size and hash the commit counts: the stripped image's when the upload (or, when it says
   * nothing, its team) asks for its metadata to be stripped. Stripping again after a crash finds
   * nothing more to strip, so the size is then read from storage, not from Upload-Length.
   */
  private async storedContent(row: TusUploadRow): Promise<{ size: number; hash: string }> {
    const strip = row.options.stripMetadata ?? (await this.deps.teamStates.get(row.teamId)).stripMetadata;
    if (!strip) return { size: row.length, hash: await this.hashObject(row.storageKey) };
    const stored = await this.deps.stripper.strip(row.storageKey, row.sniffedType, row.length);
    if (stored) return stored;
    const info = await this.deps.store.stat(row.storageKey);
    if (!info) throw new StorageError('The completed upload is not in storage', { code: 'not-found', operation: 'stat', key: row.storageKey });
    return { size: info.size, hash: await this.hashObject(row.storageKey) };
  }

  private async hashObject(key: string): Promise<string> {
    const hasher = new InlineContentHasher(this.deps.xxhash);
    for await (const chunk of await this.deps.store.read(key)) hasher.push(chunk);
    return hasher.digest();
  }

  /** Termination (tus DELETE): the row, the reservation and the stored bytes go. 423 while a PATCH runs. */
  async terminate(teamId: string, id: string): Promise<void> {
    const token = randomUUID();
    const row = await this.uploads.claim(teamId, id, token, TUS_LEASE_MS);
    if (!row) {
      await this.find(teamId, id);
      throw uploadLocked(id);
    }
    if (row.completedAt) {
      await this.uploads.release(id, token);
      throw conflict('The upload is complete: delete its media file instead', id);
    }
    await this.discard(row);
  }

  /** Removes an unfinished upload: row first (nobody resumes it), then its reservation and its bytes. */
  private async discard(row: TusUploadRow): Promise<void> {
    await this.uploads.remove(row.id);
    await this.deps.quota.release(row.id);
    await this.deps.resumable.discard({ ...row, key: row.storageKey });
  }

  /**
   * Expired uploads (CrashSweeper): unfinished ones lose their bytes and reservation, finished ones
   * only their row (kept so far for HEAD's Media-Id). Answers how many unfinished uploads went.
   */
  async sweepExpired(now = new Date()): Promise<{ expired: number; releasedBytes: number }> {
    let expired = 0;
    let releasedBytes = 0;
    for (const row of await this.uploads.removeExpired(now)) {
      if (row.completedAt) continue;
      expired++;
      releasedBytes += row.length;
      await this.deps.quota.release(row.id);
      await this.deps.resumable.discard({ ...row, key: row.storageKey });
    }
    return { expired, releasedBytes };
  }
}

/** Storage that does not answer is worth a retry (503); other errors pass unchanged. */
function storageFailure(error: unknown): unknown {
  if (error instanceof StorageError && error.code === 'unavailable') return serviceUnavailable('Storage is temporarily unavailable, retry later', 5, error);
  return error;
}
