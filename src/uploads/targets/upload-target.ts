import type { IdempotencyClaim } from '../../domain/idempotency/idempotency-keys.ts';
import type { ServiceError } from '../../errors/service-error.ts';
import type { FileStart } from '../parsers/body-parser.ts';
import type { ReceivedFile } from '../receive/upload-actor.ts';
import type { StrippedContent } from '../metadata/metadata-stripper.ts';

/** A stored upload about to be committed: its new id and the key its bytes are under. */
export interface StoredUpload {
  id: string;
  storageKey: string;
  /** Set when the image's metadata was stripped: the stored bytes' size and hash, which the row and the quota count instead of the received. */
  stripped?: StrippedContent | null;
  /** A small file's bytes, for its commit to write into the database with its row; null or absent: they are in the object store. */
  content?: Buffer | null;
}

/** What every kind of file answers after its commit: the team's storage counted right after it. */
export interface CommittedUpload {
  usedTeamStorage: number;
}

/** A complete upload its target accepted: what it is stored as, and its commit. */
export interface AcceptedUpload<Result extends CommittedUpload> {
  /** The type the file is stored as (an upload URL's type limit is checked against it). */
  contentType: string;
  /**
   * What an idempotent retry of this upload must match (see uploadFingerprint); null when the kind
   * takes no Idempotency-Key. Computed on demand: an upload without a key never needs it.
   */
  fingerprint(): string | null;
  /**
   * Whether the request asked for its image's metadata to be stripped (null: the team's setting
   * decides). Absent: this kind of file is stored as sent.
   */
  stripMetadata?: boolean | null;
  /**
   * Runs once the bytes are durable: moves the size into the team's counted storage in the
   * statement or transaction that writes the file's row, against the same limits (402 when the
   * file does not fit), and records the Idempotency-Key's answer there when `idempotency` is given.
   */
  commit(stored: StoredUpload, idempotency: IdempotencyClaim | null): Promise<Result>;
}

/**
 * What differs between the kinds of files that share the upload core (media,
 * team files, to-do files): where the bytes go, what can be refused when the
 * file starts, and how the commit makes it visible. Everything else (streaming,
 * sniffing, hashing, size limits, the storage reservation and its release, the
 * clean-up of a failed upload) is UploadService's, the same for every kind.
 */
export interface UploadTarget<Result extends CommittedUpload> {
  /** The storage key of a new file of this kind (derived from its id, never from a user's name). */
  storageKey(teamId: string, fileId: string): string;
  /** Its small files go into the database with their rows (DATABASE_FILE_MAX_BYTES); absent: never. */
  readonly keepsSmallFilesInDatabase?: boolean;
  /** Refusals of the target's own decided before any body byte (a folder or member that does not exist: 404). */
  beforeBody?(): Promise<void>;
  /** The name the file will be stored under when the request fixed it before the body (options), else null. */
  readonly fileName: string | null;
  /** The refusal (400/415) decidable from a file's name and declared type when it starts, or null. */
  checkFile(file: FileStart): ServiceError | null;
  /** Checks the complete upload (fields, final name, type) before its bytes are made durable; throws the refusal (400, 404, 415). */
  accept(received: ReceivedFile): AcceptedUpload<Result>;
}
