import { z } from 'zod';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../domain/paging.ts';

/**
 * What describes one route in the OpenAPI document (an OperationDoc, keyed `<METHOD> <pattern>`
 * in the area files: media-operations.ts, team-operations.ts, ...), and what the areas share:
 * tags, path parameters, the RateLimit and paging headers.
 */

/** Who may call: a team API key, the operator secret, the metrics token (or loopback), or anyone. */
/** teamApiKey routes take a user's session token too (acting with that user's membership); sessionToken routes take only a session, teamApiKeyOnly routes only a key. */
export type Access = 'teamApiKey' | 'teamApiKeyOnly' | 'sessionToken' | 'authSecret' | 'metricsToken' | 'public';

export interface ResponseDoc {
  description: string;
  /** A JSON body; omit for an answer without one. */
  schema?: z.ZodType;
  /** Non-JSON answers: media type to its schema (e.g. text/html); beside `schema` when the answer depends on Accept. */
  content?: Record<string, z.ZodType>;
  headers?: z.ZodObject;
}

export interface OperationDoc {
  operationId: string;
  summary: string;
  description?: string;
  tag: Tag;
  access: Access;
  query?: z.ZodObject;
  /** Request headers the route reads (e.g. the paging headers). */
  headers?: z.ZodObject;
  /** A JSON body: the schema the service validates it with. Other media types through `bodyContent`. */
  body?: z.ZodType;
  bodyContent?: Record<string, z.ZodType>;
  bodyRequired?: boolean;
  /** Success answers by status. */
  responses: Record<number, ResponseDoc>;
  /** Error answers by status (all in the Error body), with what they mean on this route. */
  errors: Record<number, string>;
  /** Error statuses that carry Retry-After on this route, besides 429 and 503 (which always do). */
  retryAfterOn?: number[];
}

export const TAGS = {
  media: 'Media files: upload, list, link, change, delete.',
  folders: 'Media folders and their rules.',
  library: 'Tags in use and usage.',
  files: 'The files themselves, for browsers and CDNs.',
  automations: 'Webhook and Discord targets for team events, with their deliveries.',
  team: 'The team itself: read, change, archive.',
  logs: 'The team log: every change made to the team.',
  members: 'Members of the team: list, read, change, kick, leave.',
  groups: 'Groups of the team and who is in them.',
  apiKeys: 'The team\'s API keys.',
  modules: 'The team\'s modules.',
  invites: 'Invites into the team\'s groups.',
  plans: 'Plans, their limits and prices, and a team\'s plan.',
  teamFiles: 'Files members keep in the team, counted in the team storage with media.',
  todos: 'To-do boards, to-dos and their files.',
  meetings: 'Meetings: participants, agenda, protocol, and their states (start, end, lock, cancel).',
  logoffs: 'Members\' announced absences, over a range or from a meeting.',
  penaltyPoints: 'Penalty points members give each other, counting until they expire.',
  worryBox: 'Messages from members to a group, named or anonymous, and their answers.',
  teamTags: 'The team\'s own tags (not media tags), put on to-dos.',
  accesses: 'What the team hands out, assigned to members and groups.',
  news: 'News for the team\'s members, drafts for editors, and the team\'s news banner.',
  links: 'Links the team shows its members.',
  portal: 'The team\'s portal: subdomain, custom domain and its TXT verification, the public portal pages.',
  auth: 'Signing up, in and out.',
  users: 'The signed-in user: its record, password, sessions and teams.',
  verification: 'Confirmations by mail: email verification, and actions (email change, ownership transfer, team and account deletion, export) confirmed by tokens.',
  operator: 'Teams, members, groups, keys, limits and users (operator secret).',
  operatorAutomations: 'The automation routes for the operator, for any team.',
  service: 'Health, metrics and this description.',
} as const;
export type Tag = keyof typeof TAGS;

/** Path parameters by name, for every pattern that uses them. */
export const PATH_PARAMETERS: Record<string, z.ZodType> = {
  teamId: z.uuid().meta({ description: 'The team; a team key must belong to it (401 otherwise).' }),
  mediaId: z.uuid().meta({ description: 'A media file of the team.' }),
  uploadId: z.uuid().meta({ description: 'A resumable (tus) upload of the team: the last segment of its Location.' }),
  folderId: z.uuid().meta({ description: 'A folder of the team.' }),
  memberId: z.uuid().meta({ description: 'A member of the team.' }),
  groupId: z.uuid().meta({ description: 'A group of the team.' }),
  noteId: z.uuid().meta({ description: 'A note about the member.' }),
  inviteId: z.uuid().meta({ description: 'An invite.' }),
  keyId: z.uuid().meta({ description: 'An API key id.' }),
  urlId: z.string().meta({ description: 'An upload URL, as createUploadUrl names it.' }),
  automationId: z.uuid().meta({ description: 'An automation of the team.' }),
  deliveryId: z.uuid().meta({ description: 'A delivery of the automation.' }),
  file: z.string().meta({ description: '`<mediaId>` or `<mediaId>.<ext>`, exactly as the file\'s path and links name it.' }),
  asset: z.string().meta({ description: 'A file of the documentation page, or of the dashboard.' }),
  view: z.string().meta({ description: 'A view of the dashboard (media, upload, ...); the page shows it.' }),
  item: z.string().meta({ description: 'What the dashboard view shows (a file, a folder, ...).' }),
  detail: z.string().meta({ description: 'A part of what the dashboard view shows.' }),
  fileId: z.uuid().meta({ description: 'A team file, or a to-do file.' }),
  boardId: z.uuid().meta({ description: 'A to-do board of the team.' }),
  todoId: z.uuid().meta({ description: 'A to-do of the team.' }),
  meetingId: z.uuid().meta({ description: 'A meeting of the team.' }),
  logoffId: z.uuid().meta({ description: 'A logoff of the team.' }),
  pointId: z.uuid().meta({ description: 'Penalty points of the team.' }),
  entryId: z.uuid().meta({ description: 'A worry box entry of the team.' }),
  tagId: z.uuid().meta({ description: 'A team tag.' }),
  accessId: z.uuid().meta({ description: 'An access of the team.' }),
  assignmentId: z.uuid().meta({ description: 'An assignment of the access.' }),
  newsId: z.uuid().meta({ description: 'A news item of the team.' }),
  linkId: z.uuid().meta({ description: 'A link of the team.' }),
  portal: z.string().meta({ description: 'A portal\'s subdomain, or its custom domain once active.' }),
  provider: z.string().meta({ description: 'An OAuth sign-in provider: discord or google; 404 unless configured.' }),
  providerId: z.string().meta({ description: 'A linked account\'s provider: credential, discord, google, minecraft-manual, hytale-manual.' }),
  sessionId: z.uuid().meta({ description: 'A session of the signed-in user.' }),
  code: z.string().meta({ description: 'A launcher sign-in code\'s identifier, `XXXX-XXXX` (any case).' }),
  userId: z.uuid().meta({ description: 'A user.' }),
  exportId: z.uuid().meta({ description: 'An account export, as its link names it.' }),
};

export const rateLimitHeaders = z.object({
  'RateLimit-Limit': z.int().meta({ description: 'Requests allowed per window for this key.', header: { id: 'RateLimitLimit' } }),
  'RateLimit-Remaining': z.int().meta({ description: 'Requests left in the current window.', header: { id: 'RateLimitRemaining' } }),
  'RateLimit-Reset': z.int().meta({ description: 'Seconds until the window resets.', header: { id: 'RateLimitReset' } }),
});
export const retryAfter = z.int().meta({ description: 'Seconds to wait before retrying.', header: { id: 'RetryAfter' } });

/** The paging headers (spec 4.4; readPaging takes query parameters of these names too). */
export const paging = z.object({
  pageNumber: z.int().min(1).max(1_000_000).default(1).meta({ description: 'Page to answer, from 1.', param: { id: 'PageNumber' } }),
  pageSize: z.int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE).meta({ description: `Items per page, 1-${MAX_PAGE_SIZE}.`, param: { id: 'PageSize' } }),
});

export const text = (description: string) => z.string().meta({ description });

export function binary(): z.ZodType {
  return z.string().meta({ format: 'binary', contentMediaType: 'application/octet-stream' });
}

/** The description of a team route that needs `permission`. */
export const teamRoute = (permission: string) => `Needs \`${permission}\`.`;
