import { EventKind } from './event-kinds.ts';

/** An outbox row (`media_event`) as the dispatcher reads it. */
export interface OutboxEvent {
  id: string;
  teamId: string;
  kind: string;
  /** What the writer stored: for `media.uploaded`, `{ media: <media record of the upload response> }`. */
  payload: Record<string, unknown>;
  occurredAt: Date;
}

/** The media record of a `media.uploaded` delivery. */
export interface MediaRecord {
  id: string;
  fileName: string;
  /** `media/team/<teamId>/<file>`. */
  path: string;
  /** The public link, or null for a private file. */
  publicUrl: string | null;
  public: boolean;
  /** Bytes. */
  size: number;
  contentType: string;
  /** The content hash of the upload response (see docs/design.md, "Content hash"). */
  hash: string | null;
  folderId: string | null;
  tags: string[];
  createdAt: string | null;
}

/** The JSON body of a webhook delivery. */
export interface EventPayload {
  /** The event id: the same for every target and every attempt. */
  id: string;
  kind: string;
  occurredAt: string;
  teamId: string;
  /** Kind-specific: `{ media }` for `media.uploaded`. */
  data: Record<string, unknown>;
}

function stringOr<T>(value: unknown, fallback: T): string | T {
  return typeof value === 'string' ? value : fallback;
}

/** The media record of an event, or null when the event carries none (another kind). */
export function mediaOf(event: Pick<OutboxEvent, 'payload'>): MediaRecord | null {
  const media = event.payload['media'];
  if (media === null || typeof media !== 'object') return null;
  const m = media as Record<string, unknown>;
  if (typeof m['id'] !== 'string') return null;
  const publicUrl = stringOr(m['publicUrl'], null);
  return {
    id: m['id'],
    fileName: stringOr(m['fileName'], ''),
    path: stringOr(m['path'], ''),
    publicUrl,
    public: typeof m['public'] === 'boolean' ? m['public'] : publicUrl !== null,
    size: typeof m['size'] === 'number' ? m['size'] : Number(m['size'] ?? 0),
    contentType: stringOr(m['contentType'], 'application/octet-stream'),
    hash: stringOr(m['hash'], null),
    folderId: stringOr(m['folderId'], null),
    tags: Array.isArray(m['tags']) ? m['tags'].filter((tag): tag is string => typeof tag === 'string') : [],
    createdAt: stringOr(m['createdAt'], null),
  };
}

/** The body every target of an event receives (a `discord` target gets it reformatted). */
export function eventPayload(event: OutboxEvent): EventPayload {
  const data: Record<string, unknown> = event.kind === EventKind.mediaUploaded ? { media: mediaOf(event) } : { ...event.payload };
  return { id: event.id, kind: event.kind, occurredAt: event.occurredAt.toISOString(), teamId: event.teamId, data };
}

/** What decides whether an automation receives an event. */
export interface AutomationFilter {
  teamId: string;
  eventKinds: readonly string[];
  /** Only files in this folder (and, with includeSubfolders, its descendants); null: any folder or none. */
  folderId: string | null;
  includeSubfolders: boolean;
  /** A file must carry all of them; empty: no tag filter. */
  tags: readonly string[];
  /** An automation receives only events that occurred after it was created. */
  createdAt: Date;
}

/**
 * True when `event` goes to an automation with `filter`. `ancestorsOf(folderId)`
 * answers the folder and all its ancestors (as they are when the event is
 * fanned out). Folder and tag filters only match events that carry a media
 * record; an event of another kind never passes them.
 */
export function matchesAutomation(filter: AutomationFilter, event: OutboxEvent, ancestorsOf: (folderId: string) => ReadonlySet<string>): boolean {
  if (filter.teamId !== event.teamId) return false;
  if (!filter.eventKinds.includes(event.kind)) return false;
  if (event.occurredAt.getTime() < filter.createdAt.getTime()) return false;
  if (filter.folderId === null && filter.tags.length === 0) return true;
  const media = mediaOf(event);
  if (!media) return false;
  if (filter.folderId !== null) {
    if (media.folderId === null) return false;
    const inFolder = media.folderId === filter.folderId || (filter.includeSubfolders && ancestorsOf(media.folderId).has(filter.folderId));
    if (!inFolder) return false;
  }
  return filter.tags.every((tag) => media.tags.includes(tag));
}
