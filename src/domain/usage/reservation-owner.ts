/** The process that makes a reservation: its instance id (stable across restarts) and this start's boot id. */
export interface ReservationOwner {
  readonly instanceId: string;
  readonly bootId: string;
}
