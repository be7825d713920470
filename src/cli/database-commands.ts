import { parseArgs } from 'node:util';
import type { Config } from '../config/config.ts';
import path from 'node:path';
import { takeBackup } from '../backup/backup.ts';
import { exportDatabase } from '../backup/database-export.ts';
import { importDatabase } from '../backup/database-import.ts';
import { restoreBackup } from '../backup/restore.ts';
import { createObjectStore } from '../storage/create-object-store.ts';
import type { ObjectStore } from '../storage/object-store.ts';
import { startEmbeddedPostgres } from '../db/embedded-postgres.ts';
import { badRequest, toServiceError } from '../errors/errors.ts';
import type { Logger } from '../logging/logger.ts';
import { cliLogger, loadCliConfig } from './cli-setup.ts';

/**
 * The cli commands that work on the database as a whole: db export, db import, backup, restore (docs/operations.md): they open the database
 * themselves, without the service's composition, which would migrate an import's empty target and
 * seed it. Same conventions as the other commands: the result as JSON on stdout, a refusal as the
 * spec's error body on stderr and exit 1, a usage error exit 2.
 */

interface DatabaseCommand {
  usage: string;
  options: Record<string, { type: 'string' | 'boolean' }>;
  /** The positional arguments the command takes, by name (all required). */
  positionals: string[];
  run(context: { config: Config; logger: Logger; databaseUrl: string; args: Record<string, string>; values: Record<string, unknown> }): Promise<unknown>;
}

const databaseCommands: Record<string, DatabaseCommand> = {
  'db export': {
    usage: 'db export FILE   (the database, from one snapshot, while the service runs)',
    options: {},
    positionals: ['FILE'],
    run: ({ databaseUrl, args }) => exportDatabase(databaseUrl, args.FILE!),
  },
  'db import': {
    usage: 'db import FILE   (into an empty database: DATABASE_URL, or the embedded one in DATA_DIR)',
    options: {},
    positionals: ['FILE'],
    run: ({ databaseUrl, args }) => importDatabase(databaseUrl, args.FILE!),
  },
  backup: {
    usage: 'backup DIR   (the database from one snapshot and, on fs, the files its rows name, while the service runs)',
    options: {},
    positionals: ['DIR'],
    run: ({ config, databaseUrl, args }) => withStore(config, (store) => takeBackup({ databaseUrl, store, directory: path.resolve(args.DIR!), dataDir: config.dataDir })),
  },
  restore: {
    usage: 'restore DIR   (into an empty database and the configured storage)',
    options: {},
    positionals: ['DIR'],
    run: ({ config, databaseUrl, args }) => withStore(config, (store) => restoreBackup({ databaseUrl, store, directory: path.resolve(args.DIR!), dataDir: config.dataDir })),
  },
};

async function withStore<T>(config: Config, work: (store: ObjectStore) => Promise<T>): Promise<T> {
  const store = await createObjectStore(config.storage, config.dataDir);
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

export const databaseCommandUsages = (): string[] => Object.values(databaseCommands).map((command) => command.usage);

/** Runs `argv` when it names one of these commands and answers its exit code; null when it names none. */
export async function runDatabaseCommand(argv: string[]): Promise<number | null> {
  const name = [argv.slice(0, 2).join(' '), argv[0] ?? ''].find((candidate) => databaseCommands[candidate]);
  if (!name) return null;
  const command = databaseCommands[name]!;
  let values: Record<string, unknown>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv.slice(name.split(' ').length), options: command.options, allowPositionals: true, strict: true }));
    if (positionals.length !== command.positionals.length) throw new Error(`expected ${command.positionals.join(' ')}`);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\nUsage: npm run --silent cli -- ${command.usage}\n`);
    return 2;
  }
  const config = loadCliConfig();
  if (!config) return 1;
  const logger = cliLogger(config);
  let database: { url: string; stop(): Promise<void> };
  try {
    // As the other commands: a running service's embedded server is used as it is, and left running.
    database = config.databaseUrl
      ? { url: config.databaseUrl, stop: async () => undefined }
      : await startEmbeddedPostgres({ dataDir: config.dataDir, databaseName: 'media', takeOver: false, log: (line) => logger.debug({ postgres: line }) });
  } catch (error) {
    process.stderr.write(`Cannot open the database: ${(error as Error).message}\n`);
    return 1;
  }
  try {
    const args = Object.fromEntries(command.positionals.map((positional, index) => [positional, positionals[index]!]));
    const result = await command.run({ config, logger, databaseUrl: database.url, args, values });
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    // A file or directory the operator named that cannot be read or written: their path, not a 500.
    const fsError = error as NodeJS.ErrnoException;
    const pathError = fsError.syscall && fsError.path ? badRequest(fsError.message, fsError.path) : null;
    const serviceError = pathError ?? toServiceError(error);
    if (!pathError && serviceError !== error) logger.error({ err: error }, 'command failed');
    process.stderr.write(`${JSON.stringify(serviceError.toBody(), null, 2)}\n`);
    return 1;
  } finally {
    await database.stop();
  }
}
