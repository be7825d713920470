import { defineEntity, p } from '@mikro-orm/core';
import { Team } from '../teams/team.entity.ts';

/**
 * The transactional outbox: an event is written in the transaction that makes
 * its cause visible, so it is never lost and never announces what did not land.
 */
export const MediaEventSchema = defineEntity({
  name: 'MediaEvent',
  indexes: [{ name: 'media_event_team_created_idx', properties: ['team', 'occurredAt'] }],
  properties: {
    id: p.uuid().primary(),
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    /** e.g. `media.uploaded` ("Media uploaded" in the spec). */
    kind: p.string().length(64),
    payload: p.json<Record<string, unknown>>(),
    occurredAt: p.datetime(),
  },
});

export class MediaEvent extends MediaEventSchema.class {}
MediaEventSchema.setClass(MediaEvent);
