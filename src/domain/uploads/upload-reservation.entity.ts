import { defineEntity, p } from '@mikro-orm/core';
import { Team } from '../teams/team.entity.ts';

/**
 * Storage held by an upload in progress. Its bytes are also added to
 * team.reserved_storage in the same statement, so the quota check sees them;
 * a row that outlives its upload (a crashed instance) is what the sweeper
 * uses to give the bytes back.
 */
export const UploadReservationSchema = defineEntity({
  name: 'UploadReservation',
  indexes: [{ name: 'upload_reservation_updated_idx', properties: ['updatedAt'] }],
  properties: {
    /** The id the media row will have. */
    id: p.uuid().primary(),
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    bytes: p.bigint('number').check('bytes >= 0'),
    storageKey: p.string().length(255),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});

export class UploadReservation extends UploadReservationSchema.class {}
UploadReservationSchema.setClass(UploadReservation);
