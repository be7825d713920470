import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey } from '../api-keys/api-key.entity.ts';
import type { MediaFile } from './media-file.entity.ts';

/** Who uploaded a file, as the single-media read answers it: the API key, or null. */
export interface MediaUploader {
  keyId: string;
  /** The key's description; null when it has none. */
  name: string | null;
}

/**
 * The key that uploaded `file` (also through an upload URL the key made). Null for a file
 * uploaded by a signed-in member (a session has no key) and for a deleted key, whose id the
 * media row loses (`on delete set null`).
 */
export async function uploaderOf(em: EntityManager, file: MediaFile): Promise<MediaUploader | null> {
  const keyId = file.uploadedByKey?.id;
  if (!keyId) return null;
  const key = await em.findOne(ApiKey, { id: keyId, team: file.team.id }, { fields: ['id', 'description'] });
  return key ? { keyId: key.id, name: key.description ?? null } : null;
}
