import { migrations } from './migrations/index.ts';

/** The migrations this version knows, in order: the newest schema it can run on. */
export const knownMigrations: readonly string[] = migrations.map((migration) => migration.name);

/** The migrator's table (MikroORM's default name), which lists the applied migrations. */
export const MIGRATIONS_TABLE = 'mikro_orm_migrations';

/** Applied migrations (`applied`, in order) that this version does not know: a newer version applied them. */
export function unknownMigrations(applied: readonly string[]): string[] {
  const known = new Set(knownMigrations);
  return applied.filter((name) => !known.has(name));
}

/**
 * Whether `applied` is where this version's own list starts (every applied migration known, none of
 * the known ones skipped), so that the rest of the list can run on top of it.
 */
export function isKnownPrefix(applied: readonly string[]): boolean {
  return applied.length <= knownMigrations.length && applied.every((name, index) => knownMigrations[index] === name);
}

/** The start-up refusal on a database a newer version has migrated; `where` names the database (the setting). */
export function newerSchemaMessage(unknown: readonly string[], where: string): string {
  return (
    `${where} holds a newer schema than this version of the service knows: ${unknown.length} applied ` +
    `migration${unknown.length === 1 ? '' : 's'} it does not have (${unknown.join(', ')}). ` +
    'A newer version of the service has upgraded it, and this version would run on tables it does not understand. ' +
    'Start the newer version again, or restore the backup taken before the upgrade into an empty database ' +
    '(docs/operations.md, "Upgrading").'
  );
}
