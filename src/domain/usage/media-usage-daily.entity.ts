import { defineEntity, p } from '@mikro-orm/core';
import { Team } from '../teams/team.entity.ts';

/** Uploads per team and UTC day, for GET /usage. */
export const MediaUsageDailySchema = defineEntity({
  name: 'MediaUsageDaily',
  properties: {
    team: () => p.manyToOne(Team).primary().deleteRule('cascade'),
    day: p.date().primary(),
    uploads: p.integer().default(0),
    uploadBytes: p.bigint('number').default(0),
    /** Uploads made with API keys (as opposed to the web app's sessions). */
    apiUploads: p.integer().default(0),
  },
});

export class MediaUsageDaily extends MediaUsageDailySchema.class {}
MediaUsageDailySchema.setClass(MediaUsageDaily);
