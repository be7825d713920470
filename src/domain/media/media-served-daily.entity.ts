import { defineEntity, p } from '@mikro-orm/core';
import { Team } from '../teams/team.entity.ts';

/** Responses served by the service itself per team and UTC day (Migration20261121040000ServedTraffic), for GET /usage. */
export const MediaServedDailySchema = defineEntity({
  name: 'MediaServedDaily',
  properties: {
    team: () => p.manyToOne(Team).primary().deleteRule('cascade'),
    day: p.date().primary(),
    requests: p.bigint('number').default(0),
    /** Body bytes handed to the connection (0 for HEAD and 304). */
    bytes: p.bigint('number').default(0),
  },
});

export class MediaServedDaily extends MediaServedDailySchema.class {}
MediaServedDailySchema.setClass(MediaServedDaily);
