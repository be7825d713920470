import type { Principal } from '../../auth/principal.ts';
import type { AttachedFileService } from '../../domain/team-files/attached-file.service.ts';
import { fileStorageKey, type FileKind } from '../../domain/team-files/file-kinds.ts';
import { isUuid } from '../../domain/validation.ts';
import { badRequest, missingArgument, unsupportedMediaType } from '../../errors/errors.ts';
import { checkNameAndType, resolveContentType } from '../../domain/file-types.ts';
import { refusalAtFileStart } from '../options/file-refusal.ts';
import type { FileStart } from '../parsers/body-parser.ts';
import type { ReceivedFile } from '../receive/upload-actor.ts';
import { parseFileName } from '../../domain/file-names.ts';
import type { StoredUpload, UploadTarget } from './upload-target.ts';

/** Options of a team or to-do file upload known before the body: the multipart route's query, or the to-do of the path. */
export interface AttachedFileOptions {
  fileName: string | null;
  /** The member (team files, from the multipart query) or the to-do (from the path) the file is for. */
  attachId: string | null;
}

/** The multipart route's query options of a team file: `fileName` and `targetTeamMemberId`, both optional. */
export function parseAttachedFileQuery(query: URLSearchParams, kind: FileKind): AttachedFileOptions {
  const fileName = query.get('fileName');
  return {
    fileName: fileName === null ? null : parseFileName(fileName),
    attachId: kind.attachField === 'targetTeamMemberId' ? parseMemberId(query.get('targetTeamMemberId')) : null,
  };
}

function parseMemberId(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !isUuid(value)) throw badRequest('targetTeamMemberId must be a team member id', 'targetTeamMemberId');
  return value.toLowerCase();
}

type AttachedFileCreated = Awaited<ReturnType<AttachedFileService['commit']>>;

/**
 * A team file or a to-do file (spec 2.4) on the upload core: the same streaming,
 * sniffing, blocking, size limits and reservation as media; the commit counts
 * it in the same team storage counter (AttachedFileService.commit).
 */
export class AttachedFileUploadTarget implements UploadTarget<AttachedFileCreated> {
  private readonly files: AttachedFileService;
  private readonly kind: FileKind;
  private readonly principal: Principal;
  /** Known before the body: the multipart query (fileName, target member) and the path's to-do; JSON members complete them. */
  private readonly options: AttachedFileOptions;
  private readonly json: boolean;

  constructor(files: AttachedFileService, kind: FileKind, principal: Principal, options: AttachedFileOptions, json: boolean) {
    this.files = files;
    this.kind = kind;
    this.principal = principal;
    this.options = options;
    this.json = json;
  }

  get fileName(): string | null {
    return this.options.fileName;
  }

  storageKey(teamId: string, fileId: string): string {
    return fileStorageKey(this.kind, teamId, fileId);
  }

  /** A to-do or target member named before the body must exist (404 before any byte). */
  async beforeBody(): Promise<void> {
    await this.files.checkAttached(this.kind, this.principal.teamId, this.options.attachId);
  }

  checkFile(file: FileStart) {
    return refusalAtFileStart(this.json ? null : this.options, file);
  }

  accept(received: ReceivedFile) {
    const { fields } = received;
    let fileName = this.options.fileName;
    let attachId = this.options.attachId;
    if (this.json) {
      if (fields.fileName === undefined || fields.fileName === null) throw missingArgument('fileName');
      fileName = parseFileName(fields.fileName);
      if (this.kind.attachField === 'targetTeamMemberId') attachId = parseMemberId(fields.targetTeamMemberId);
    } else if (fileName === null && received.file.fileName) {
      fileName = parseFileName(received.file.fileName, 'file name');
    }
    if (!fileName) throw badRequest('The file has no name; give fileName', 'fileName');
    const blocked = checkNameAndType(fileName, received.file.declaredType);
    if (blocked) throw unsupportedMediaType(`Blocked file type: ${blocked}`, blocked);
    const contentType = resolveContentType(received.sniffedType, received.file.declaredType, fileName);
    const { principal, kind } = this;
    const name = fileName;
    return {
      contentType,
      fingerprint: () => null, // team and to-do file routes take no Idempotency-Key
      commit: (stored: StoredUpload) =>
        this.files.commit(kind, {
          teamId: principal.teamId, fileId: stored.id, storageKey: stored.storageKey, uploaderMemberId: principal.memberId, attachId, fileName: name,
          contentType, size: received.size, hash: received.hash,
        }),
    };
  }
}
