import { randomUUID } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.ts';
import { ensureFolderPath, findFolder, findFolderPath, type FolderRef } from '../domain/folders/folder-resolver.ts';
import type { MediaService } from '../domain/media/media.service.ts';
import type { TeamService } from '../domain/teams/team.service.ts';
import type { StorageQuota } from '../domain/uploads/storage-quota.ts';
import { commitUpload } from '../domain/uploads/upload-commit.ts';
import { badRequest, payloadTooLarge, requestTimeout, serviceUnavailable, teamLimit, unsupportedMediaType } from '../errors/errors.ts';
import type { RequestBody } from '../http/request-body.ts';
import type { XxHashApi } from '../media/content-hash.ts';
import { checkNameAndType, resolveContentType, sniffContent } from '../media/file-type.ts';
import type { MediaPool } from '../pool/media-pool.ts';
import { StorageError, type ObjectStore, type ObjectWriter } from '../storage/object-store.ts';
import { InlineContentHasher, PooledContentHasher, type ContentHasher } from './content-hasher.ts';
import { refusalAtFileStart } from './file-refusal.ts';
import type { BodyParser, BodyParserEvents } from './parsers/body-parser.ts';
import { UploadActor, type ReceivedFile } from './upload-actor.ts';
import { parseFileName, parseJsonOptions, type UploadOptions } from './upload-options.ts';

export const MB = 1_000_000;

export type UploadRoute = 'multipart' | 'json';

/** Spec 8: request size limits per route. */
export const MAX_BODY_BYTES: Record<UploadRoute, number> = { multipart: 260 * MB, json: 140 * MB };

/** How often running uploads refresh their reservations' updated_at, so the crash sweeper can tell them from a dead instance's. */
export const RESERVATION_REFRESH_MS = 60_000;

// Bytes of a body that may be form or JSON framing rather than file content. Only
// used to decide, from Content-Length alone, that a file must be too large.
const FRAMING_ALLOWANCE = 64 * 1024;

export interface UploadServiceDeps {
  orm: MikroORM;
  store: ObjectStore;
  pool: MediaPool;
  xxhash: XxHashApi;
  quota: StorageQuota;
  /** Bodies of at least this many bytes hash in the worker pool; null: always inline. */
  hashOffloadMinBytes: number | null;
  teams: TeamService;
  media: MediaService;
  /** An upload whose body stops arriving for this long (while we wait for the client) ends with 408. */
  idleTimeoutSeconds: number;
}

/** An upload between its first body byte and its answer, as shutdown sees it. */
interface RunningUpload {
  /** The media id, also the id of its upload_reservation row. */
  id: string;
  storageKey: string;
  /** Aborts it if it still receives its body; a commit under way is left to finish. */
  abort(reason: Error): void;
  settled: Promise<unknown>;
}

export interface PreparedUpload {
  principal: Principal;
  route: UploadRoute;
  options: UploadOptions | null;
  maxFileBytes: number | null;
  folder: FolderRef | null;
}

export interface UploadRequest {
  prepared: PreparedUpload;
  body: RequestBody;
  createParser(events: BodyParserEvents): BodyParser;
}

/** The smallest file a body of `length` bytes can carry. */
function smallestFile(route: UploadRoute, length: number): number {
  const content = Math.max(0, length - FRAMING_ALLOWANCE);
  return route === 'json' ? Math.floor((content * 3) / 4) : content;
}

export function storageKeyOf(teamId: string, mediaId: string): string {
  return `media/${teamId}/${mediaId}`;
}

/**
 * The upload use case: refusals decided from the headers before any body byte
 * (413, 402, 404 folder), then one UploadActor per request, then the commit
 * that makes the file visible in one transaction.
 */
export class UploadService {
  private readonly deps: UploadServiceDeps;
  private readonly running = new Set<RunningUpload>();
  private refreshTimer: NodeJS.Timeout | null = null;

  constructor(deps: UploadServiceDeps) {
    this.deps = deps;
  }

  /** Uploads streaming or committing now. */
  get inFlight(): number {
    return this.running.size;
  }

  /** Uploads running now: reservation ids and storage keys (the crash sweeper leaves them alone). */
  liveUploads(): { id: string; storageKey: string }[] {
    return [...this.running].map((upload) => ({ id: upload.id, storageKey: upload.storageKey }));
  }

  /** Marks the running uploads' reservations as alive (crash sweeper, issue 6.2). Best effort: a failure is retried next minute. */
  private refreshReservations(): void {
    const ids = [...this.running].map((upload) => upload.id);
    if (ids.length === 0) return;
    void this.deps.orm.em
      .fork()
      .getConnection()
      .execute(`update upload_reservation set updated_at = now() where id in (${ids.map(() => '?').join(', ')})`, ids)
      .catch(() => undefined);
  }

  /** Resolves true once no upload runs, or false when `timeoutMs` passed first. */
  async drain(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.running.size > 0) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, remaining)));
      await Promise.race([Promise.allSettled([...this.running].map((upload) => upload.settled)), timedOut]);
      clearTimeout(timer);
    }
    return true;
  }

  /** Aborts every upload still receiving its body (shutdown): its write is aborted, its reservation released, its client answered `reason`. */
  abortAll(reason: Error): void {
    for (const upload of this.running) upload.abort(reason);
  }

  async prepare(principal: Principal, route: UploadRoute, declaredLength: number | null, options: UploadOptions | null): Promise<PreparedUpload> {
    const maxBody = MAX_BODY_BYTES[route];
    if (declaredLength !== null && declaredLength > maxBody) throw payloadTooLarge(maxBody);
    const team = await this.deps.teams.getStorageState(principal.teamId);
    const limits = team.limits;
    if (declaredLength !== null) {
      const least = smallestFile(route, declaredLength);
      if (limits.maxMediaFileSize !== null && least > limits.maxMediaFileSize) {
        throw teamLimit('maxMediaFileSize', `The file is larger than the team's limit of ${limits.maxMediaFileSize} bytes`, limits.maxMediaFileSize);
      }
      const storageBytes = limits.maxTeamStorage === null ? null : limits.maxTeamStorage * 1024;
      if (storageBytes !== null && team.usedStorage + team.reservedStorage + least > storageBytes) {
        throw teamLimit('maxTeamStorage', 'The team storage is full', 'maxTeamStorage');
      }
    }
    const folder = options?.folderId ? await findFolder(this.deps.orm.em.fork(), principal.teamId, options.folderId) : null;
    return { principal, route, options, maxFileBytes: limits.maxMediaFileSize, folder };
  }

  /** Streams the body through an UploadActor and answers the 201 body, or throws the refusal. */
  async run(request: UploadRequest) {
    const { prepared, body } = request;
    const teamId = prepared.principal.teamId;
    const mediaId = randomUUID();
    const storageKey = storageKeyOf(teamId, mediaId);
    const { store, pool, quota } = this.deps;
    const offloadFrom = this.deps.hashOffloadMinBytes;
    const hasher: ContentHasher =
      offloadFrom !== null && (body.declaredLength ?? Infinity) >= offloadFrom
        ? new PooledContentHasher(pool, this.deps.xxhash)
        : new InlineContentHasher(this.deps.xxhash);
    let reserved = false;
    const idleSeconds = this.deps.idleTimeoutSeconds;
    const idle = new IdleTimer(idleSeconds * 1000, () => actor.send({ type: 'abort', reason: requestTimeout(idleSeconds) }));

    const actor = new UploadActor(
      {
        createParser: request.createParser,
        // Name and declared type are judged when the file starts: a blocked file is refused before storage opens.
        checkFile: (file) => refusalAtFileStart(prepared.options, file),
        openWriter: () => store.openWriter(storageKey, { contentType: 'application/octet-stream', expectedSize: body.declaredLength ?? undefined }),
        // Inline: sniffing 4 KiB takes ~20 µs, less than sending it to a worker (README, Performance).
        sniff: async (head) => sniffContent(head),
        hashChunk: (chunk) => hasher.push(chunk),
        resetHash: () => hasher.reset(),
        digest: () => hasher.digest(),
        reserve: async (bytes) => {
          reserved = true;
          return quota.reserve(teamId, mediaId, storageKey, bytes);
        },
        release: async () => {
          if (reserved) await quota.release(mediaId);
        },
        commit: (received, writer) => this.commit(prepared, mediaId, storageKey, received, writer),
        // Time paused by us (storage or quota behind) is not the client's idle time.
        pauseBody: () => {
          idle.pause();
          body.pause();
        },
        resumeBody: () => {
          idle.resume();
          body.resume();
        },
      },
      { maxBodyBytes: MAX_BODY_BYTES[prepared.route], maxFileBytes: prepared.maxFileBytes },
    );
    const running: RunningUpload = {
      id: mediaId,
      storageKey,
      abort: (reason) => {
        if (actor.currentState === 'receiving') actor.send({ type: 'abort', reason });
      },
      settled: actor.result.catch(() => undefined),
    };
    this.running.add(running);
    if (!this.refreshTimer) {
      this.refreshTimer = setInterval(() => this.refreshReservations(), RESERVATION_REFRESH_MS);
      this.refreshTimer.unref();
    }
    body.consume({
      chunk: (data) => {
        idle.touch();
        actor.send({ type: 'chunk', data });
      },
      end: () => {
        idle.stop();
        actor.send({ type: 'end' });
      },
      abort: (reason) => {
        idle.stop();
        actor.send({ type: 'abort', reason });
      },
    });
    if (!body.complete) idle.start();
    try {
      return await actor.result;
    } catch (error) {
      // Storage that does not answer is worth a retry; the cause goes to the log, not the client.
      if (error instanceof StorageError && error.code === 'unavailable') {
        throw serviceUnavailable('Storage is temporarily unavailable, retry later', 5, error);
      }
      throw error;
    } finally {
      idle.stop();
      this.running.delete(running);
      if (this.running.size === 0 && this.refreshTimer) {
        clearInterval(this.refreshTimer);
        this.refreshTimer = null;
      }
    }
  }

  private async commit(prepared: PreparedUpload, mediaId: string, storageKey: string, received: ReceivedFile, writer: ObjectWriter) {
    const { principal } = prepared;
    const options = prepared.options ?? parseJsonOptions(received.fields);
    const fileName = options.fileName ?? (received.file.fileName ? parseFileName(received.file.fileName, 'file name') : null);
    if (!fileName) throw badRequest('The file has no name; give fileName', 'fileName');
    const blocked = checkNameAndType(fileName, received.file.declaredType);
    if (blocked) throw unsupportedMediaType(`Blocked file type: ${blocked}`, blocked);
    const contentType = resolveContentType(received.sniffedType, received.file.declaredType, fileName);

    await writer.finish();
    try {
      const em = this.deps.orm.em.fork();
      const folderPath = options.folderPath;
      // An existing folder path is read without a lock; only a missing one needs the
      // folder-creating transaction (which then commits the upload with it).
      const existing = folderPath ? await findFolderPath(em, principal.teamId, folderPath) : null;
      if (folderPath && !existing) {
        return await em.transactional(async (tx) => {
          const folder = await ensureFolderPath(tx, principal.teamId, folderPath);
          return this.insert(tx, { prepared, options, mediaId, storageKey, received, fileName, contentType, folder });
        });
      }
      const folder = existing ?? (options.folderId ? await findFolder(em, principal.teamId, options.folderId) : null);
      return await this.insert(em, { prepared, options, mediaId, storageKey, received, fileName, contentType, folder });
    } catch (error) {
      await this.deps.store.remove(storageKey).catch(() => undefined);
      throw error;
    }
  }

  /** One statement (see commitUpload): counted, row, outbox event and usage, or nothing and a 402/404. */
  private async insert(em: EntityManager, upload: ResolvedUpload) {
    const { prepared: { principal, route }, options, mediaId, storageKey, received, fileName, contentType, folder } = upload;
    // Spec 3.1: explicit `public` wins, then the folder's default, then the route's default.
    const isPublic = options.public ?? folder?.defaultPublic ?? route === 'multipart';
    const createdAt = new Date();
    const view = this.deps.media.recordView({
      id: mediaId, teamId: principal.teamId, folderId: folder?.id ?? null, fileName, isPublic, tags: options.tags,
      size: received.size, contentType, hash: received.hash, createdAt, updatedAt: createdAt,
    });
    const usedStorage = await commitUpload(em, {
      mediaId, teamId: principal.teamId, folderId: folder?.id ?? null, fileName, storageKey, size: received.size, contentType,
      hash: received.hash, isPublic, tags: options.tags, uploadedByKeyId: principal.keyId, createdAt,
      eventId: randomUUID(), payload: { media: view },
    });
    if (usedStorage === null) {
      // Nothing was written: the folder went away meanwhile, or the team's storage is full.
      if (folder) await findFolder(em, principal.teamId, folder.id);
      throw teamLimit('maxTeamStorage', 'The team storage is full', 'maxTeamStorage');
    }
    return { ...view, usedTeamStorage: usedStorage };
  }
}

/** An upload whose body is stored and whose name, type and folder are settled: what its commit writes. */
interface ResolvedUpload {
  prepared: PreparedUpload;
  options: UploadOptions;
  mediaId: string;
  storageKey: string;
  received: ReceivedFile;
  fileName: string;
  contentType: string;
  folder: FolderRef | null;
}

/**
 * Counts how long the client has sent nothing while we wait for it: restarted
 * by every chunk, suspended while we hold the body paused, stopped at its end.
 */
class IdleTimer {
  private readonly timeoutMs: number;
  private readonly onIdle: () => void;
  private timer: NodeJS.Timeout | null = null;
  private paused = false;
  private stopped = false;

  constructor(timeoutMs: number, onIdle: () => void) {
    this.timeoutMs = timeoutMs;
    this.onIdle = onIdle;
  }

  start(): void {
    this.arm();
  }

  touch(): void {
    if (!this.paused) this.arm();
  }

  pause(): void {
    this.paused = true;
    this.clear();
  }

  resume(): void {
    this.paused = false;
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    this.clear();
  }

  private arm(): void {
    this.clear();
    if (this.stopped || this.paused) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.stopped = true;
      this.onIdle();
    }, this.timeoutMs);
  }

  private clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
