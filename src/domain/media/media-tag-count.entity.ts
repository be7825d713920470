import { defineEntity, p } from '@mikro-orm/core';
import { Team } from '../teams/team.entity.ts';

/**
 * How many of a team's files carry each tag, for GET /tags
 * (Migration20261121050000TagCounts). Read-only for the application: triggers
 * on media_file keep it exact; rows reaching 0 are deleted. The migration also
 * creates a pg_trgm GIN index on `tag` ("media_tag_count_tag_trgm_idx") for the
 * substring search.
 */
export const MediaTagCountSchema = defineEntity({
  name: 'MediaTagCount',
  indexes: [
    {
      name: 'media_tag_count_team_count_idx',
      properties: ['team', 'count', 'tag'],
      columns: [{ name: 'team_id' }, { name: 'count', sort: 'desc' }, { name: 'tag' }],
    },
  ],
  properties: {
    team: () => p.manyToOne(Team).primary().deleteRule('cascade'),
    /** Lower case, as stored on media_file (parseTags). */
    tag: p.string().length(64).primary(),
    count: p.integer().check('count >= 0'),
  },
});

export class MediaTagCount extends MediaTagCountSchema.class {}
MediaTagCountSchema.setClass(MediaTagCount);
