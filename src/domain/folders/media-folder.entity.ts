import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../base.entity.ts';
import { Team } from '../teams/team.entity.ts';

export const MAX_FOLDER_DEPTH = 5;

export const MediaFolderSchema = defineEntity({
  name: 'MediaFolder',
  extends: BaseSchema,
  // Sibling names are unique; the root level is enforced by a partial index in the migration.
  uniques: [{ properties: ['team', 'parent', 'name'] }],
  properties: {
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    parent: () => p.manyToOne(MediaFolder).nullable().deleteRule('cascade').index(),
    name: p.string().length(100).check('length(name) >= 1'),
    /** 1 for a top-level folder, at most 5. */
    depth: p.smallint().default(1).check('depth between 1 and 5'),
    retentionDays: p.integer().nullable().check('retention_days is null or retention_days >= 1'),
    maxFiles: p.integer().nullable().check('max_files is null or max_files >= 1'),
    /** Null when the folder has no default and the route's own default applies. */
    defaultPublic: p.boolean().nullable(),
  },
});

export class MediaFolder extends MediaFolderSchema.class {}
MediaFolderSchema.setClass(MediaFolder);
