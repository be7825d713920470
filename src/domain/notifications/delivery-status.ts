/**
 * The states of a notification delivery (spec 3.2) and the only transitions between them
 * (docs/workspace.md, Notification deliveries, has this table). NotificationDeliveries writes a
 * status only through this table: a transition not listed is never written.
 */
export const DELIVERY_STATUSES = ['QUEUED', 'SENT', 'DELIVERED', 'FAILED', 'SUPPRESSED'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** What a delivery may start as: decided to send, or decided not to (a preference or missing consent). */
export const INITIAL_STATUSES = ['QUEUED', 'SUPPRESSED'] as const satisfies readonly DeliveryStatus[];
export type InitialStatus = (typeof INITIAL_STATUSES)[number];

/** Each status a delivery may move to, with the statuses it may come from. */
export const DELIVERY_TRANSITIONS: Readonly<Record<Exclude<DeliveryStatus, InitialStatus>, readonly DeliveryStatus[]>> = {
  /** The provider (the SMTP server) accepted the message. */
  SENT: ['QUEUED'],
  /** The provider reported the message delivered: needs a provider receipt, which SMTP does not give. */
  DELIVERED: ['SENT'],
  /** Sending failed for good (refused, or out of attempts), or the provider reported a bounce after SENT. */
  FAILED: ['QUEUED', 'SENT'],
};

export type LaterStatus = keyof typeof DELIVERY_TRANSITIONS;

/** Whether `from` may move to `to`. */
export function mayMove(from: DeliveryStatus, to: LaterStatus): boolean {
  return DELIVERY_TRANSITIONS[to].includes(from);
}
