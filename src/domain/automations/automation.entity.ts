import { defineEntity, p } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { BaseSchema } from '../base.entity.ts';
import { Team } from '../teams/team.entity.ts';
import { MediaEvent } from '../media/media-event.entity.ts';

export const AUTOMATION_KINDS = ['webhook', 'discord'] as const;
export type AutomationKind = (typeof AUTOMATION_KINDS)[number];

/** A team's webhook target: where events of the kinds it subscribes to (and that pass its filters) are delivered. */
export const AutomationSchema = defineEntity({
  name: 'Automation',
  extends: BaseSchema,
  indexes: [{ name: 'automation_team_created_idx', properties: ['team', 'createdAt'] }],
  properties: {
    team: () => p.manyToOne(Team).deleteRule('cascade'),
    name: p.string().length(100).check('length(name) >= 1'),
    /** `webhook`: the event JSON, signed; `discord`: a Discord webhook message. */
    kind: p.string().length(16).check("kind in ('webhook', 'discord')"),
    url: p.string().length(2048),
    /** HMAC key of the signature header; shown on create and rotation only. */
    secret: p.string().length(128),
    eventKinds: p.json<string[]>(),
    /** Folder filter; a plain id (no foreign key): a deleted folder's filter matches nothing, it never widens. */
    folderId: p.uuid().nullable(),
    includeSubfolders: p.boolean().default(false),
    /** A file must carry every one of them. */
    tags: p.json<string[]>(),
    enabled: p.boolean().default(true),
  },
});

export class Automation extends AutomationSchema.class {}
AutomationSchema.setClass(Automation);

export const DELIVERY_STATUSES = ['pending', 'delivering', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * One event for one automation. Written by the fan-out, claimed and updated by
 * the dispatcher with plain SQL (see src/automation-delivery/dispatcher.ts); `seq` is
 * the per-target delivery order.
 */
export const AutomationDeliverySchema = defineEntity({
  name: 'AutomationDelivery',
  uniques: [{ name: 'automation_delivery_automation_event_unique', properties: ['automation', 'event'] }],
  properties: {
    id: p.uuid().primary().onCreate(() => randomUUID()),
    seq: p.bigint('number').generated('always as identity'),
    automation: () => p.manyToOne(Automation).deleteRule('cascade'),
    event: () => p.manyToOne(MediaEvent).deleteRule('cascade').index(),
    status: p.string().length(16).default('pending').check("status in ('pending', 'delivering', 'delivered', 'failed')"),
    attempts: p.integer().default(0).check('attempts >= 0'),
    nextAttemptAt: p.datetime(),
    /** While `delivering`: the claim's lease; another instance may take the delivery over once it has passed. */
    lockedUntil: p.datetime().nullable(),
    lastStatus: p.integer().nullable(),
    lastError: p.text().nullable(),
    deliveredAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});

export class AutomationDelivery extends AutomationDeliverySchema.class {}
AutomationDeliverySchema.setClass(AutomationDelivery);
