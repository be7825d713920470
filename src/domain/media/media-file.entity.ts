import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { ApiKey } from '../api-keys/api-key.entity.ts';
import { MediaFolder } from '../folders/media-folder.entity.ts';
import { Team } from '../teams/team.entity.ts';

export const MediaFileSchema = defineEntity({
  name: 'MediaFile',
  extends: BaseSchema,
  indexes: [
    { name: 'media_file_team_created_idx', properties: ['team', 'createdAt', 'id'] },
    // (team, folder) lookups use media_file_team_folder_created_idx (Migration20261121020000MediaSearch).
  ],
  properties: {
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    folder: () => p.manyToOne(MediaFolder).nullable().deleteRule('set null'),
    fileName: p.string().length(255),
    /** Storage object key, derived from the id, never from user input. */
    storageKey: p.string().length(255).unique(),
    /** Where the bytes are (src/storage/storage-location.ts): `fs`, `s3:<bucket>/<prefix>` or `db`; written by the upload commit only. */
    storageLocation: p.text().nullable(),
    size: p.bigint('number').check('size >= 0'),
    contentType: p.string().length(255),
    /** xxhash64 of the content, hex. */
    hash: p.string().length(32).nullable(),
    isPublic: p.boolean(),
    tags: p.array().default([]),
    uploadedByKey: () => p.manyToOne(ApiKey).nullable().deleteRule('set null'),
    /** null: not an image; pending, ready or failed (Migration20261128020000Thumbnails). Set by a trigger and the thumbnailer only. */
    thumbnailStatus: p.string().length(16).nullable(),
    /** Bytes of the stored thumbnail, when ready. */
    thumbnailSize: p.integer().nullable(),
  },
});

export class MediaFile extends MediaFileSchema.class {}
MediaFileSchema.setClass(MediaFile);
