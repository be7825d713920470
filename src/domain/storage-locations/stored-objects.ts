/**
 * The tables whose rows name a stored object (`storage_key`) that outlives its upload: media, team
 * files and to-do files. Not tus_upload and upload_reservation: those are in-flight state, swept or
 * completed by the service that made them, and never copied between stores.
 */
export const STORED_OBJECT_TABLES = [
  { kind: 'media', table: 'media_file' },
  { kind: 'team-file', table: 'team_file' },
  { kind: 'todo-file', table: 'todo_file' },
] as const;

export type StoredObjectKind = (typeof STORED_OBJECT_TABLES)[number]['kind'];

/** Keys go into `= any(string_to_array(?, ','))`: storage keys and uuids hold no comma (isValidKey). */
export function sqlList(values: readonly string[]): string {
  return values.join(',');
}
