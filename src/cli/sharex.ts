import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { CoreServices } from '../composition/services.ts';
import { Permission, Scope } from '../auth/permissions.ts';
import type { Config } from '../config/config.ts';
import { badRequest } from '../errors/errors.ts';
import { parseFolderPath } from '../domain/file-names.ts';
import { parseTags } from '../domain/tags.ts';

/**
 * A ShareX custom uploader (.sxcu, ShareX 14+ syntax) for a team: multipart to the upload route,
 * the file in the form field `file`, the link from the answer's `publicUrl` (spec 2.1), and the
 * deletion link ShareX keeps in its history from the answer's `deletionUrl` (asked for with deletionUrl=true).
 */
export interface SharexUploaderInput {
  publicUrl: string;
  teamId: string;
  key: string;
  folder?: string;
  tags?: string[];
}

export function sharexUploader(input: SharexUploaderInput): Record<string, unknown> {
  const parameters: Record<string, string> = { public: 'true', deletionUrl: 'true' };
  if (input.folder !== undefined) parameters['folder'] = input.folder;
  if (input.tags !== undefined && input.tags.length > 0) parameters['tags'] = input.tags.join(',');
  return {
    Version: '15.0.0',
    Name: `Media upload service (team ${input.teamId.slice(0, 8)})`,
    DestinationType: 'ImageUploader, TextUploader, FileUploader',
    RequestMethod: 'POST',
    RequestURL: `${input.publicUrl}/v1/cdn/media/${input.teamId}/upload/file`,
    Parameters: parameters,
    Headers: { Authorization: `Bearer ${input.key}` },
    Body: 'MultipartFormData',
    FileFormName: 'file',
    URL: '{json:publicUrl}',
    DeletionURL: '{json:deletionUrl}',
    ErrorMessage: '{json:message}',
  };
}

/** `sharex --team ID (--key KEY | --create-key) [--folder PATH] [--tags a,b] [--out FILE]`. */
export async function writeSharexUploader(services: CoreServices, config: Config, values: Record<string, unknown>) {
  const teamId = typeof values['team'] === 'string' ? values['team'] : '';
  const givenKey = typeof values['key'] === 'string' ? values['key'] : undefined;
  const createKey = values['create-key'] === true;
  if ((givenKey === undefined) === !createKey) throw badRequest('Give exactly one of --key KEY or --create-key', 'key');
  const folder = values['folder'] === undefined ? undefined : parseFolderPath(values['folder']).join('/');
  const tags = parseTags(values['tags']);
  let key: string;
  let createdKeyId: string | undefined;
  if (givenKey !== undefined) {
    const principal = await services.authenticator.keys.authenticate(`Bearer ${givenKey}`);
    if (principal.teamId !== teamId) throw badRequest('--key belongs to another team', 'key');
    if (!principal.permissions.has(Permission.mediaUpload)) throw badRequest('--key may not upload (team.media.upload)', 'key');
    key = givenKey;
  } else {
    const created = await services.apiKeys.create(teamId, { description: 'ShareX', scopes: [Scope.mediaUpload] });
    key = created.key;
    createdKeyId = created.id;
  }
  const file = resolve(typeof values['out'] === 'string' ? values['out'] : `media-upload-${teamId.slice(0, 8)}.sxcu`);
  const uploader = sharexUploader({ publicUrl: config.publicUrl, teamId, key, folder, tags });
  // It holds the key: readable by its owner only.
  await writeFile(file, `${JSON.stringify(uploader, null, 2)}\n`, { mode: 0o600 });
  return { file, requestUrl: uploader['RequestURL'], ...(createdKeyId ? { createdKeyId } : {}) };
}
