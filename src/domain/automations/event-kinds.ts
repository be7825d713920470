/**
 * Event kinds an automation can subscribe to. Every kind is written to the
 * outbox (`media_event`) in the transaction that makes its cause visible; the
 * dispatcher delivers whatever kind it finds there. New kinds (for example the
 * team log actions of spec 2.19, as `team.log.<ACTION>`) are added here and
 * written to the outbox by their service; nothing else changes.
 */
export const EventKind = {
  /** Spec 6, "Media uploaded": a file landed in the media library. */
  mediaUploaded: 'media.uploaded',
} as const;

export type EventKindName = (typeof EventKind)[keyof typeof EventKind];

export const eventKinds: readonly EventKindName[] = Object.values(EventKind);

/**
 * A test message, sent to one target on request (`POST .../automations/{id}/test`) and never
 * fanned out: no target subscribes to it, so it is not among `eventKinds`.
 */
export const TEST_EVENT_KIND = 'automation.test';
