import { badRequest, fileAboveSizeLimit, fileTooLarge, payloadTooLarge, teamStorageFull, unsupportedMediaType } from '../../errors/errors.ts';
import type { ServiceError } from '../../errors/service-error.ts';
import type { ObjectWriter } from '../../storage/object-store.ts';
import type { BodyParser, BodyParserEvents, FileStart } from '../parsers/body-parser.ts';

/** Bytes of a file's start that type sniffing looks at. */
export const SNIFF_BYTES = 4096;
/** Files up to this size are not reserved while streaming; the commit's conditional update alone guards the quota. */
export const UNRESERVED_BYTES = 256 * 1024;
/**
 * The same for a file whose body declares it can be at most this large (a screenshot of known
 * length): storing it unreserved risks at most this many bytes written and removed again when its
 * commit finds the team full, and saves a reservation statement on the team row per upload.
 */
export const UNRESERVED_DECLARED_BYTES = 4 * 1024 * 1024;
const MIN_RESERVATION_STEP = 1024 * 1024;

export interface SniffOutcome {
  contentType: string | null;
  blocked: string | null;
}

/** Everything the actor knows once the body is complete, handed to the commit. */
export interface ReceivedFile {
  file: FileStart;
  fields: Record<string, unknown>;
  size: number;
  hash: string;
  sniffedType: string | null;
}

/** The actor's view of the world; the route wires it to storage, the pool, the quota and the body. */
export interface UploadEnvironment<Result> {
  createParser(events: BodyParserEvents): BodyParser;
  /** The refusal (400/415) decidable from a file's name and declared type when it starts, or null. */
  checkFile(file: FileStart): ServiceError | null;
  openWriter(): ObjectWriter;
  sniff(head: Buffer): Promise<SniffOutcome>;
  /** Feeds the content hash; digest() when the file is complete. */
  hashChunk(chunk: Buffer): void;
  resetHash(): void;
  digest(): Promise<string>;
  /**
   * Grows the upload's storage reservation by `step` bytes, or by `ahead` bytes (more) when the team
   * has ample room for them; answers the bytes added, 0 when the team's storage cannot hold `step`.
   */
  reserve(step: number, ahead: number | null): Promise<number>;
  release(): Promise<void>;
  /** Validates the complete upload and commits it (media row, quota, event); may throw a ServiceError. */
  commit(received: ReceivedFile, writer: ObjectWriter): Promise<Result>;
  pauseBody(): void;
  resumeBody(): void;
}

export interface UploadLimits {
  /** Largest body accepted (413 beyond). */
  maxBodyBytes: number;
  /** The team's maxMediaFileSize (402 beyond); null means unlimited. */
  maxFileBytes: number | null;
  /** A size the request fixed for its file (an upload URL's maxSizeBytes; 413 beyond); null or absent: none. */
  fileCapBytes?: number | null;
  /**
   * The most the file can be, as far as the request tells (from its body's declared length); null
   * or absent: unknown. The first reservation asks for this much at once where the team has ample
   * room, so that a large upload waits for one reservation instead of one per doubling step.
   */
  expectedFileBytes?: number | null;
  /**
   * The team had room for all of the expected size, with the margin the reservation keeps, when last
   * seen: while that reservation is on its way, the file may grow into all of it, not only its step.
   */
  aheadLikelyGranted?: boolean;
}

export type UploadMessage =
  /** `transient`: `data` is valid only during send() (see UploadBodyConsumer). */
  | { type: 'chunk'; data: Buffer; transient?: boolean }
  | { type: 'end' }
  | { type: 'parsed'; fields: Record<string, unknown> }
  | { type: 'abort'; reason: Error }
  | { type: 'drain' }
  | { type: 'writer-error'; error: Error }
  | { type: 'reserved'; bytes: number; exact: boolean }
  | { type: 'sniffed'; outcome: SniffOutcome; generation: number }
  | { type: 'failed'; error: unknown };

type State = 'receiving' | 'committing' | 'done' | 'failed';

/**
 * One upload, as an explicit state machine driven by messages, one at a time.
 * It owns the body parser, the storage writer, the byte counters, the hash
 * feed, the sniff result and the quota reservation; nothing else touches them.
 *
 *   receiving --end, sniffed, parsed--> committing --committed--> done
 *       \--refusal, abort, storage error--> failed (writer aborted, reservation released)
 */
export class UploadActor<Result> {
  readonly result: Promise<Result>;
  private state: State = 'receiving';
  private readonly env: UploadEnvironment<Result>;
  private readonly limits: UploadLimits;
  private readonly parser: BodyParser;
  private resolveResult!: (value: Result) => void;
  private rejectResult!: (error: unknown) => void;

  private bodyBytes = 0;
  private bodyEnded = false;
  private parsedFields: Record<string, unknown> | null = null;
  private file: FileStart | null = null;
  /** The current file's refusal, kept while a later part named `file` may still replace it. */
  private refusal: ServiceError | null = null;
  /** Counts files started, so results about an abandoned file are recognised. */
  private fileGeneration = 0;
  private fileEnded = false;
  private fileBytes = 0;
  private writer: ObjectWriter | null = null;
  private readonly abandonedWriters: ObjectWriter[] = [];
  private head: Buffer[] = [];
  private headBytes = 0;
  private sniffStarted = false;
  private sniffOutcome: SniffOutcome | null = null;
  private reservedBytes = 0;
  private reservationPending = false;
  /** What the file may grow into while the reservation on its way is awaited: its step, or its `ahead` where that is likely granted. */
  private pendingAllowance = 0;
  private reserveExactly = false;
  private readonly pausedBy = new Set<'writer' | 'quota'>();
  /** The chunk being parsed is transient: what the file keeps of it must be copied, and the writer told. */
  private transientInput = false;
  /** Bytes a file may reach before it is reserved. */
  private readonly unreservedBytes: number;

  constructor(env: UploadEnvironment<Result>, limits: UploadLimits) {
    this.env = env;
    this.limits = limits;
    const expected = limits.expectedFileBytes ?? null;
    this.unreservedBytes = expected !== null && expected <= UNRESERVED_DECLARED_BYTES ? UNRESERVED_DECLARED_BYTES : UNRESERVED_BYTES;
    this.result = new Promise<Result>((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
    this.parser = env.createParser({
      fileStart: (info) => this.onFileStart(info),
      fileData: (chunk) => this.onFileData(chunk),
      fileEnd: () => this.onFileEnd(),
      finish: (fields) => this.send({ type: 'parsed', fields }),
      error: (error) => this.send({ type: 'failed', error }),
    });
  }

  get currentState(): State {
    return this.state;
  }

  /** Paused only because the writer is behind, and the writer takes more while behind: it may take more now. */
  get takesWhilePaused(): boolean {
    return this.state === 'receiving' && this.pausedBy.size === 1 && this.pausedBy.has('writer') && this.writer?.takesWhileBehind?.() === true;
  }

  /** Receiving into a writer that copies every chunk: a transient chunk spares a copy before it. */
  get writerCopiesChunks(): boolean {
    return this.state === 'receiving' && this.writer?.copiesChunks === true;
  }

  send(message: UploadMessage): void {
    if (this.state === 'done' || this.state === 'failed') return;
    try {
      this.handle(message);
    } catch (error) {
      this.fail(error);
    }
  }

  private handle(message: UploadMessage): void {
    switch (message.type) {
      case 'chunk':
        if (this.state !== 'receiving') return;
        this.bodyBytes += message.data.length;
        if (this.bodyBytes > this.limits.maxBodyBytes) throw payloadTooLarge(this.limits.maxBodyBytes);
        // The parsers keep nothing of their input (file bytes are views of it, anything held is copied).
        this.transientInput = message.transient === true;
        try {
          this.parser.write(message.data);
        } finally {
          this.transientInput = false;
        }
        return;
      case 'end':
        if (this.state !== 'receiving') return;
        this.bodyEnded = true;
        this.parser.end();
        return;
      case 'parsed':
        if (this.state !== 'receiving') return;
        if (!this.file) throw badRequest('The request contains no file', 'file');
        if (this.refusal) throw this.refusal;
        this.parsedFields = message.fields;
        this.onFileEnd();
        this.maybeCommit();
        return;
      case 'drain':
        this.resume('writer');
        return;
      case 'reserved':
        this.reservationPending = false;
        if (message.bytes > 0) this.reservedBytes += message.bytes;
        else if (message.exact) throw teamStorageFull({ bytes: this.fileBytes, atLeast: true });
        // A generous step did not fit; the bytes actually received still may.
        else this.reserveExactly = true;
        if (!this.requestReservation()) {
          this.resume('quota');
          this.maybeCommit();
        }
        return;
      case 'sniffed':
        if (message.generation !== this.fileGeneration) return; // the sniff of an abandoned file
        this.sniffOutcome = message.outcome;
        if (message.outcome.blocked) throw unsupportedMediaType(`Blocked file type: ${message.outcome.blocked}`, message.outcome.blocked);
        this.maybeCommit();
        return;
      case 'writer-error':
      case 'failed':
        throw message.error;
      case 'abort':
        throw message.reason;
    }
  }

  private onFileStart(info: FileStart): boolean {
    if (this.file) {
      // A later part named `file` wins over an earlier file part of another name (spec 4.2).
      if (info.fieldName !== 'file' || this.file.fieldName === 'file') return false;
      this.abandonCurrentFile();
    }
    this.file = info;
    this.fileGeneration++;
    const refusal = this.env.checkFile(info);
    if (refusal) {
      // The JSON file or a part named `file` is final: refused now, before any storage is opened.
      // Another part may yet be replaced by a later part named `file`: its bytes are skipped, and
      // the refusal stands if it is still the file when the body ends.
      if (info.fieldName === null || info.fieldName === 'file') throw refusal;
      this.refusal = refusal;
      return false;
    }
    this.writer = this.env.openWriter();
    const writer = this.writer;
    writer.onDrain(() => {
      if (writer === this.writer) this.send({ type: 'drain' });
    });
    writer.onError((error) => {
      if (writer === this.writer) this.send({ type: 'writer-error', error });
    });
    return true;
  }

  private onFileData(chunk: Buffer): void {
    if (this.state !== 'receiving' || !this.writer) return;
    this.fileBytes += chunk.length;
    const maxFile = this.limits.maxFileBytes;
    const cap = this.limits.fileCapBytes ?? null;
    // Past both: the smaller limit was crossed first.
    if (cap !== null && this.fileBytes > cap && (maxFile === null || cap <= maxFile)) throw fileTooLarge(cap);
    if (maxFile !== null && this.fileBytes > maxFile) {
      throw fileAboveSizeLimit(maxFile, { bytes: this.fileBytes, atLeast: true });
    }
    if (this.headBytes < SNIFF_BYTES) {
      this.head.push(this.transientInput ? Buffer.from(chunk.subarray(0, SNIFF_BYTES - this.headBytes)) : chunk);
      this.headBytes += chunk.length;
      if (this.headBytes >= SNIFF_BYTES) this.startSniff();
    }
    this.env.hashChunk(chunk);
    if (this.requestReservation()) this.pause('quota');
    if (!this.writer.write(chunk, this.transientInput)) this.pause('writer');
  }

  private onFileEnd(): void {
    if (this.fileEnded || !this.file) return;
    this.fileEnded = true;
    this.startSniff();
  }

  private abandonCurrentFile(): void {
    if (this.writer) this.abandonedWriters.push(this.writer);
    this.writer = null;
    this.refusal = null;
    this.fileBytes = 0;
    this.fileEnded = false;
    this.head = [];
    this.headBytes = 0;
    this.sniffStarted = false;
    this.sniffOutcome = null;
    this.env.resetHash();
    this.resume('writer');
  }

  /**
   * Starts growing the reservation when the file outgrows it; true while the upload must wait for it.
   * While a reservation is on its way, the file goes on into the step it asks for, or into all it
   * offers ahead when the team had ample room for that: the commit waits for the answer anyway, and a
   * refusal removes what was written. Pausing the body at once saved nothing: a near client sends on
   * after a pause, and what it sent went to the body spool, to be written, read back and written
   * again once the reservation came (measured in docs/performance.md). Not into `ahead` near the
   * team's limit: the team then grants only the step, and bytes past it would make the next step
   * (sized on the bytes received) reserve more than the file has.
   */
  private requestReservation(): boolean {
    if (this.fileBytes <= Math.max(this.reservedBytes, this.unreservedBytes)) return false;
    if (!this.reservationPending) this.startReservation();
    return this.fileBytes > this.reservedBytes + this.pendingAllowance;
  }

  private startReservation(): void {
    const needed = this.fileBytes - this.reservedBytes;
    // Doubling steps keep a 250 MB upload of unknown size to a handful of round trips; when the
    // request tells the most its file can be, that much at once if the team has ample room for it.
    let step = this.reserveExactly ? needed : Math.max(needed, MIN_RESERVATION_STEP, this.reservedBytes);
    const expected = this.limits.expectedFileBytes ?? null;
    let ahead = !this.reserveExactly && expected !== null && expected - this.reservedBytes > step ? expected - this.reservedBytes : null;
    const maxFile = this.limits.maxFileBytes;
    if (maxFile !== null) {
      step = Math.max(needed, Math.min(step, maxFile - this.reservedBytes));
      if (ahead !== null && ahead > maxFile - this.reservedBytes) ahead = null;
    }
    this.reservationPending = true;
    this.pendingAllowance = ahead !== null && this.limits.aheadLikelyGranted === true ? ahead : step;
    this.env.reserve(step, ahead).then(
      (bytes) => this.send({ type: 'reserved', bytes, exact: step === needed }),
      (error: unknown) => this.send({ type: 'failed', error }),
    );
  }

  private startSniff(): void {
    if (this.sniffStarted) return;
    this.sniffStarted = true;
    const head = Buffer.concat(this.head, Math.min(this.headBytes, SNIFF_BYTES));
    const generation = this.fileGeneration;
    this.head = [];
    this.env.sniff(head).then(
      (outcome) => this.send({ type: 'sniffed', outcome, generation }),
      (error: unknown) => this.send({ type: 'failed', error }),
    );
  }

  private pause(reason: 'writer' | 'quota'): void {
    if (this.pausedBy.size === 0) this.env.pauseBody();
    this.pausedBy.add(reason);
  }

  private resume(reason: 'writer' | 'quota'): void {
    if (!this.pausedBy.delete(reason)) return;
    if (this.pausedBy.size === 0 && this.state === 'receiving') this.env.resumeBody();
  }

  private maybeCommit(): void {
    if (this.state !== 'receiving' || !this.bodyEnded || !this.parsedFields || !this.sniffOutcome || this.reservationPending) return;
    const file = this.file!;
    const writer = this.writer!;
    this.state = 'committing';
    const received = async (): Promise<Result> => {
      const hash = await this.env.digest();
      return this.env.commit({ file, fields: this.parsedFields!, size: this.fileBytes, hash, sniffedType: this.sniffOutcome!.contentType }, writer);
    };
    received().then(
      (result) => {
        // A client that left during the commit does not undo it: the file landed.
        if (this.state === 'committing') this.state = 'done';
        this.cleanUpAbandoned();
        this.resolveResult(result);
      },
      (error: unknown) => this.fail(error),
    );
  }

  private fail(error: unknown): void {
    if (this.state === 'done' || this.state === 'failed') return;
    this.state = 'failed';
    this.env.pauseBody();
    this.parser.destroy();
    const writers = this.writer ? [this.writer, ...this.abandonedWriters] : this.abandonedWriters;
    // Clean-up failures leave traces for the sweeper; the client hears the cause, not the clean-up.
    void Promise.allSettled([...writers.map((writer) => writer.abort()), this.env.release()]).then(() => this.rejectResult(error));
  }

  private cleanUpAbandoned(): void {
    for (const writer of this.abandonedWriters) void writer.abort().catch(() => undefined);
  }
}

