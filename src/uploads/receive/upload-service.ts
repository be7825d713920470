import { newMediaId } from '../../domain/media/media-id.ts';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Principal } from '../../auth/principal.ts';
import type { IdempotencyClaim } from '../../domain/idempotency/idempotency-keys.ts';
import type { TeamStateCache } from '../../domain/teams/team-state-cache.ts';
import type { TeamStorageState } from '../../domain/teams/team.service.ts';
import { grantsAhead, type StorageQuota } from '../quota/storage-quota.ts';
import { fileAboveSizeLimit, payloadTooLarge, requestTimeout, serviceUnavailable, teamStorageFull } from '../../errors/errors.ts';
import type { XxHashApi } from '../hashing/content-hash.ts';
import { resolveContentType } from '../../domain/file-types.ts';
import { sniffContent } from '../sniffing/sniff-content.ts';
import type { MediaPool } from '../../pool/media-pool.ts';
import { StorageError, type ObjectStore, type ObjectWriter } from '../../storage/object-store.ts';
import { InlineContentHasher, PooledContentHasher, type ContentHasher } from '../hashing/content-hasher.ts';
import { DiscardWriter } from './discard-writer.ts';
import { HeldBytesWriter } from './held-bytes-writer.ts';
import { IdleTimer } from './idle-timer.ts';
import type { BodyParser, BodyParserEvents, FileStart } from '../parsers/body-parser.ts';
import { declaredTypeRefusal, sizeRefusal, storedTypeRefusal, type FileConstraints } from '../options/file-constraints.ts';
import { RunningUploads, type RunningUpload } from './running-uploads.ts';
import { UploadActor, type ReceivedFile } from './upload-actor.ts';
import type { UploadBody } from './upload-body.ts';
import type { AcceptedUpload, CommittedUpload, StoredUpload, UploadTarget } from '../targets/upload-target.ts';
import type { MetadataStripper, StrippedContent } from '../metadata/metadata-stripper.ts';

export const MB = 1_000_000;

/** `raw`: a body that is the file itself (an upload URL used without multipart). */
export type UploadRoute = 'multipart' | 'json' | 'raw';

/** Spec 8: request size limits per route. */
export const MAX_BODY_BYTES: Record<UploadRoute, number> = { multipart: 260 * MB, json: 140 * MB, raw: 260 * MB };

// Bytes of a body that may be form or JSON framing rather than file content. Only
// used to decide, from Content-Length alone, that a file must be too large.
const FRAMING_ALLOWANCE = 64 * 1024;

/** The stages of a created upload that UploadService times (the admission queue is timed by its caller). */
export type UploadStage = 'receive' | 'store' | 'commit';

/** What the metrics see of an upload's time (src/observability adapts it). */
export interface UploadStageObserver {
  /** A created upload spent `seconds` in `stage`. */
  stage(stage: UploadStage, seconds: number): void;
}

export interface UploadServiceDeps {
  orm: MikroORM;
  store: ObjectStore;
  pool: MediaPool;
  xxhash: XxHashApi;
  quota: StorageQuota;
  /** Strips the metadata of images whose upload asks for it, once stored and before the commit. */
  stripper: MetadataStripper;
  /**
   * Files that can be at most this large (by their body's declared length) go into the database with
   * their row, for the targets that keep small files there; 0: none (DATABASE_FILE_MAX_BYTES).
   */
  databaseFileMaxBytes: number;
  /** Bodies of at least this many bytes hash in the worker pool; null: always inline. */
  hashOffloadMinBytes: number | null;
  /** Team limits and storage counters, kept coherent across instances. */
  teamStates: TeamStateCache;
  /** An upload whose body stops arriving for this long (while we wait for the client) ends with 408. */
  idleTimeoutSeconds: number;
  /** Told each created upload's time per stage (the metrics). */
  observer?: UploadStageObserver;
}

export interface PreparedUpload<Result extends CommittedUpload = CommittedUpload> {
  principal: Principal;
  route: UploadRoute;
  /** The kind of file: its storage keys, early refusals and commit. */
  target: UploadTarget<Result>;
  maxFileBytes: number | null;
  /** Size and type limits the request fixed for its file (an upload URL's); null: none. */
  constraints: FileConstraints | null;
  /** The team's free storage as last seen (a hint, maybe cached): null when unlimited. */
  freeStorage: number | null;
  /** The team's stripMetadata setting: what an upload that does not say stripMetadata gets. */
  stripMetadataByDefault: boolean;
}

export interface UploadRequest<Result extends CommittedUpload = CommittedUpload> {
  prepared: PreparedUpload<Result>;
  body: UploadBody;
  createParser(events: BodyParserEvents): BodyParser;
  /**
   * Aborted once the client can no longer receive the answer. An upload whose client is gone by
   * the time its bytes are stored is not committed: a file stored without its answer would be
   * stored again by the client's retry.
   */
  clientGone?: AbortSignal;
  /** The media id to store the file as (the caller needs it to know, after a failure, whether it was committed); a new one otherwise. */
  mediaId?: string;
  /** The request's Idempotency-Key claim: its answer is recorded in the transaction of its commit. */
  idempotency?: IdempotencyClaim | null;
}

/** The client left after its body arrived and before the commit: nothing is committed. */
export class ClientGoneError extends Error {
  override name = 'ClientGoneError';
  constructor() {
    super('The client left before the upload was committed');
  }
}

/** The smallest file a body of `length` bytes can carry. */
function smallestFile(route: UploadRoute, length: number): number {
  if (route === 'raw') return length;
  const content = Math.max(0, length - FRAMING_ALLOWANCE);
  return route === 'json' ? Math.floor((content * 3) / 4) : content;
}

/** The largest file a body of `length` bytes can carry (base64 decodes to three quarters of its length at most). */
function largestFile(route: UploadRoute, length: number): number {
  return route === 'json' ? Math.ceil((length * 3) / 4) : length;
}

/** Bytes the team can still store by `team`'s counters; null when its storage is unlimited. */
function freeStorageOf(team: TeamStorageState): number | null {
  const limit = team.limits.maxTeamStorage;
  return limit === null ? null : limit * 1024 - team.usedStorage - team.reservedStorage;
}

/** Why the headers alone already refuse an upload under `team`'s state, or null. */
function refusalFromHeaders(team: TeamStorageState, route: UploadRoute, declaredLength: number | null) {
  if (declaredLength === null) return null;
  const limits = team.limits;
  const least = smallestFile(route, declaredLength);
  if (limits.maxMediaFileSize !== null && least > limits.maxMediaFileSize) {
    return fileAboveSizeLimit(limits.maxMediaFileSize, { bytes: least, atLeast: route !== 'raw' });
  }
  const free = freeStorageOf(team);
  if (free !== null && least > free) {
    return teamStorageFull({ bytes: least, atLeast: route !== 'raw' }, limits.maxTeamStorage);
  }
  return null;
}

/**
 * The upload core under UploadUseCase: refusals decided from the headers before any body byte
 * (413, 402, 404 folder), then one UploadActor per request, then the commit
 * (UploadCommitter) that makes the file visible.
 */
export class UploadService {
  private readonly deps: UploadServiceDeps;
  private readonly running: RunningUploads;

  constructor(deps: UploadServiceDeps) {
    this.deps = deps;
    this.running = new RunningUploads({ orm: deps.orm });
  }

  /** Uploads streaming or committing now. */
  get inFlight(): number {
    return this.running.size;
  }

  /** Uploads running now: reservation ids and storage keys (the crash sweeper leaves them alone). */
  liveUploads(): { id: string; storageKey: string }[] {
    return this.running.list();
  }

  /** Resolves true once no upload runs, or false when `timeoutMs` passed first. */
  drain(timeoutMs: number): Promise<boolean> {
    return this.running.drain(timeoutMs);
  }

  /** Aborts every upload still receiving its body (shutdown): its write is aborted, its reservation released, its client answered `reason`. */
  abortAll(reason: Error): void {
    this.running.abortAll(reason);
  }

  /**
   * A body of known length is judged on the cached team state (no query): its reservation and its
   * commit check storage and file size in the database anyway. Any refusal reads the state fresh
   * before it is answered, so a stale cache never refuses what the database would allow, and a
   * chunked body reads it fresh at once (the actor refuses it mid-body at the file size limit it is
   * given). A stale state that admits costs what the body sends before its reservation or its commit
   * refuses it; a query here would cost every large body a round trip before its first byte is read.
   */
  async prepare<Result extends CommittedUpload>(
    principal: Principal, route: UploadRoute, declaredLength: number | null, target: UploadTarget<Result>, constraints: FileConstraints | null = null,
  ): Promise<PreparedUpload<Result>> {
    const maxBody = MAX_BODY_BYTES[route];
    if (declaredLength !== null && declaredLength > maxBody) throw payloadTooLarge(maxBody);
    const oversize = declaredLength === null ? null : sizeRefusal(constraints, smallestFile(route, declaredLength));
    const { teamStates } = this.deps;
    const teamId = principal.teamId;
    const cacheable = declaredLength !== null;
    let team = cacheable ? await teamStates.get(teamId) : await teamStates.fresh(teamId);
    const maxFile = team.limits.maxMediaFileSize;
    // The body could hold a file above a cached file size limit: the actor would refuse it mid-body.
    const mightExceed = maxFile !== null && declaredLength !== null && declaredLength > maxFile;
    if (cacheable && (mightExceed || refusalFromHeaders(team, route, declaredLength))) team = await teamStates.fresh(teamId);
    // Past both the request's and the team's size: the smaller one answers, as while streaming.
    if (oversize && (maxFile === null || constraints!.maxFileBytes! <= maxFile)) throw oversize;
    const refusal = refusalFromHeaders(team, route, declaredLength) ?? oversize;
    if (refusal) throw refusal;
    await target.beforeBody?.();
    return {
      principal, route, target, maxFileBytes: team.limits.maxMediaFileSize, constraints, freeStorage: freeStorageOf(team), stripMetadataByDefault: team.stripMetadata,
    };
  }

  /** Streams the body through an UploadActor and answers the 201 body, or throws the refusal. */
  async run<Result extends CommittedUpload>(request: UploadRequest<Result>): Promise<Result> {
    return this.stream(request, false);
  }

  /**
   * Reads the body of a retried idempotent upload exactly as run() would (parsing, sniffing,
   * hashing, the same refusals of malformed bodies and blocked files), stores and reserves
   * nothing, and answers its uploadFingerprint.
   */
  async fingerprint(request: UploadRequest): Promise<string> {
    return this.stream(request, true);
  }

  private async stream<Result extends CommittedUpload>(request: UploadRequest<Result>, fingerprintOnly: false): Promise<Result>;
  private async stream(request: UploadRequest, fingerprintOnly: true): Promise<string>;
  private async stream(request: UploadRequest, fingerprintOnly: boolean): Promise<unknown> {
    const { prepared, body } = request;
    const startedAt = performance.now();
    const teamId = prepared.principal.teamId;
    const mediaId = request.mediaId ?? newMediaId();
    const { constraints } = prepared;
    let currentFile: FileStart | null = null;
    const storageKey = prepared.target.storageKey(teamId, mediaId);
    const { store, pool, quota } = this.deps;
    const offloadFrom = this.deps.hashOffloadMinBytes;
    const pooledHashing = offloadFrom !== null && (body.declaredLength ?? Infinity) >= offloadFrom;
    const hasher: ContentHasher = pooledHashing ? new PooledContentHasher(pool, this.deps.xxhash) : new InlineContentHasher(this.deps.xxhash);
    let reserved = false;
    let pendingReservation: Promise<unknown> = Promise.resolve();
    const expectedFileBytes = body.declaredLength === null ? null : largestFile(prepared.route, body.declaredLength);
    // Decided before the first byte, from the declared length: a chunked body goes to the object store.
    const heldForDatabase = prepared.target.keepsSmallFilesInDatabase === true && expectedFileBytes !== null
      && expectedFileBytes <= this.deps.databaseFileMaxBytes;
    const idleSeconds = this.deps.idleTimeoutSeconds;
    const idle = new IdleTimer(idleSeconds * 1000, () => actor.send({ type: 'abort', reason: requestTimeout(idleSeconds) }));

    const actor = new UploadActor<unknown>(
      {
        createParser: request.createParser,
        // Name and declared type are judged when the file starts: a blocked file is refused before storage opens.
        checkFile: (file) => {
          currentFile = file;
          return prepared.target.checkFile(file) ?? declaredTypeRefusal(constraints, file.declaredType);
        },
        openWriter: () => {
          if (fingerprintOnly) return new DiscardWriter();
          if (heldForDatabase) return new HeldBytesWriter();
          return store.openWriter(storageKey, { contentType: 'application/octet-stream', expectedSize: body.declaredLength ?? undefined });
        },
        // Inline: sniffing 4 KiB takes ~20 µs, less than sending it to a worker (docs/performance.md, "Defaults, and why").
        sniff: async (head) => {
          const outcome = sniffContent(head);
          if (outcome.blocked || !constraints?.contentTypes || !currentFile) return outcome;
          // The type the file would be stored as, refused as soon as its first bytes tell it.
          const name = prepared.target.fileName ?? currentFile.fileName ?? '';
          const refusal = storedTypeRefusal(constraints, resolveContentType(outcome.contentType, currentFile.declaredType, name));
          return refusal ? { ...outcome, blocked: String(refusal.value) } : outcome;
        },
        hashChunk: (chunk) => hasher.push(chunk),
        resetHash: () => hasher.reset(),
        digest: () => hasher.digest(),
        reserve: async (step, ahead) => {
          if (fingerprintOnly) return ahead ?? step;
          reserved = true;
          const reservation = quota.reserve(teamId, mediaId, storageKey, step, ahead ?? step);
          pendingReservation = reservation.catch(() => 0);
          return reservation;
        },
        release: async () => {
          if (!reserved) return;
          // A refusal can come while a reservation is still on its way: released before it landed, it would stay.
          await pendingReservation;
          await quota.release(mediaId);
        },
        commit: async (received, writer): Promise<unknown> =>
          fingerprintOnly
            ? this.accept(prepared, received).fingerprint()
            : this.commit(prepared, { id: mediaId, storageKey }, received, writer, request, startedAt),
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
      // The team's file size limit does not apply to a retry's body: it is compared, not stored.
      {
        maxBodyBytes: MAX_BODY_BYTES[prepared.route], maxFileBytes: fingerprintOnly ? null : prepared.maxFileBytes, fileCapBytes: constraints?.maxFileBytes ?? null,
        expectedFileBytes,
        aheadLikelyGranted: expectedFileBytes !== null && grantsAhead(prepared.freeStorage, expectedFileBytes),
      },
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
    body.consume({
      chunk: (data, transient) => {
        idle.touch();
        actor.send({ type: 'chunk', data, transient });
      },
      // The pooled hasher may keep views of chunks until a worker takes them: it gets owned chunks only.
      takesWhilePaused: () => !pooledHashing && actor.takesWhilePaused,
      takesTransient: () => !pooledHashing && actor.writerCopiesChunks,
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
    }
  }

  /** The target's check of the complete upload, and the type limit the request fixed (415). */
  private accept<Result extends CommittedUpload>(prepared: PreparedUpload<Result>, received: ReceivedFile) {
    const accepted = prepared.target.accept(received);
    const typeRefusal = storedTypeRefusal(prepared.constraints, accepted.contentType);
    if (typeRefusal) throw typeRefusal;
    return accepted;
  }

  /**
   * Strips the image's metadata when the request asks for it (or says nothing and the team's setting
   * does): in memory for a small file bound for the database (`held`), else the stored object. Before
   * the commit, so that the row and the counted storage are of the bytes kept; a refusal (413, 422)
   * removes the object. Answers the stripped size and hash (null: unchanged) and the bytes to commit.
   */
  private async strip<Result extends CommittedUpload>(
    prepared: PreparedUpload<Result>, accepted: AcceptedUpload<Result>, stored: StoredUpload, received: ReceivedFile, held: Buffer | null,
  ): Promise<{ stripped: StrippedContent | null; content: Buffer | null }> {
    if (accepted.stripMetadata === undefined || !(accepted.stripMetadata ?? prepared.stripMetadataByDefault)) return { stripped: null, content: held };
    if (!held) return { stripped: await this.deps.stripper.strip(stored.storageKey, received.sniffedType, received.size), content: null };
    const stripped = await this.deps.stripper.stripBytes(held, received.sniffedType);
    return stripped ? { stripped: { size: stripped.size, hash: stripped.hash }, content: stripped.data } : { stripped: null, content: held };
  }

  private async commit<Result extends CommittedUpload>(
    prepared: PreparedUpload<Result>, stored: StoredUpload, received: ReceivedFile, writer: ObjectWriter, request: UploadRequest<Result>,
    startedAt: number,
  ): Promise<Result> {
    // Fields, final name and type are checked before the bytes are made durable.
    const accepted = this.accept(prepared, received);
    const receivedAt = performance.now();
    await writer.finish();
    const held = writer instanceof HeldBytesWriter ? writer.content() : null;
    try {
      const { stripped, content } = await this.strip(prepared, accepted, stored, received, held);
      const storedAt = performance.now();
      if (request.clientGone?.aborted) throw new ClientGoneError();
      const created = await accepted.commit({ ...stored, stripped, content }, request.idempotency ?? null);
      this.deps.teamStates.noteUsedStorage(prepared.principal.teamId, created.usedTeamStorage);
      const observer = this.deps.observer;
      if (observer) {
        observer.stage('receive', (receivedAt - startedAt) / 1000);
        observer.stage('store', (storedAt - receivedAt) / 1000);
        observer.stage('commit', (performance.now() - storedAt) / 1000);
      }
      return created;
    } catch (error) {
      if (held === null) await this.deps.store.remove(stored.storageKey).catch(() => undefined);
      throw error;
    }
  }
}
