import { conflict } from '../../errors/errors.ts';

/** Meeting states of spec 3.2; the transitions are ours (docs/workspace.md, "Meetings and logoffs"). */
export const MEETING_STATES = ['PLANNED', 'RUNNING', 'FINISHED', 'LOCKED', 'CANCELLED'] as const;
export type MeetingState = (typeof MEETING_STATES)[number];

/** The states a meeting is still to come or under way in; the rest are closed and fall under meetingArchive. */
export const OPEN_MEETING_STATES: readonly MeetingState[] = ['PLANNED', 'RUNNING'];

export const MEETING_TRANSITIONS = {
  start: { from: 'PLANNED', to: 'RUNNING', stamp: 'startedAt' },
  end: { from: 'RUNNING', to: 'FINISHED', stamp: 'endedAt' },
  lock: { from: 'FINISHED', to: 'LOCKED', stamp: null },
  cancel: { from: 'PLANNED', to: 'CANCELLED', stamp: 'cancelledAt' },
} as const satisfies Record<string, { from: MeetingState; to: MeetingState; stamp: 'startedAt' | 'endedAt' | 'cancelledAt' | null }>;
export type MeetingTransition = keyof typeof MEETING_TRANSITIONS;

/** What a PATCH may change in each state: everything while planned, all but the time while running, only the protocol once finished. */
export type MeetingField = 'title' | 'dateTime' | 'agenda' | 'meetingPoint' | 'protocol' | 'participants';
const EDITABLE: Record<MeetingState, readonly MeetingField[]> = {
  PLANNED: ['title', 'dateTime', 'agenda', 'meetingPoint', 'protocol', 'participants'],
  RUNNING: ['title', 'agenda', 'meetingPoint', 'protocol', 'participants'],
  FINISHED: ['protocol'],
  LOCKED: [],
  CANCELLED: [],
};

/** 409 unless every field of `fields` may change in `state`. */
export function requireEditable(state: MeetingState, fields: readonly MeetingField[]): void {
  const refused = fields.filter((field) => !EDITABLE[state].includes(field));
  if (refused.length > 0) throw conflict(`A ${state} meeting's ${refused.join(', ')} cannot be changed`, state);
}

/** 409 for a transition from a state it does not start from. */
export function transitionRefused(transition: MeetingTransition, state: string) {
  return conflict(`The meeting is ${state}; ${transition} needs a ${MEETING_TRANSITIONS[transition].from} meeting`, state);
}
