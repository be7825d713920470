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
  indexes: [
    { name: 'upload_reservation_updated_idx', properties: ['updatedAt'] },
    { name: 'upload_reservation_instance_idx', properties: ['instanceId'] },
  ],
  properties: {
    /** The id the media row will have. */
    id: p.uuid().primary(),
    team: () => p.manyToOne(Team).deleteRule('cascade').index(),
    bytes: p.bigint('number').check('bytes >= 0'),
    storageKey: p.string().length(255),
    /** The instance that made it (InstanceIdentity) and which start of it; null for rows older than these columns. */
    instanceId: p.string().length(64).nullable(),
    bootId: p.uuid().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});

export class UploadReservation extends UploadReservationSchema.class {}
UploadReservationSchema.setClass(UploadReservation);
