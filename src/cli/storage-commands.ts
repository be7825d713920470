import type { CoreServices } from '../composition/services.ts';
import type { Config } from '../config/config.ts';
import { badRequest, conflict } from '../errors/errors.ts';
import { FORGET_MISSING_COMMAND } from '../domain/storage-locations/storage-refusal.ts';
import { cliLogger } from './cli-setup.ts';
import { forgetMissing } from '../storage-migration/forget-missing.ts';
import { pruneOldCopies } from '../storage-migration/prune-old.ts';
import { progressDisplay } from '../storage-migration/progress-display.ts';
import { CopyLedger } from '../storage-migration/copy-ledger.ts';
import { migrateStorage } from '../storage-migration/storage-migration.ts';
import { loadXxhash } from '../uploads/hashing/content-hash.ts';

/**
 * Moving storage between drivers (docs/operations.md, "Moving storage between drivers"):
 * `storage migrate --to fs|s3`, `storage prune-old` and `storage forget-missing`. Registered in main.ts.
 */

interface StorageCommand {
  usage: string;
  options: Record<string, { type: 'string' | 'boolean' }>;
  run(services: CoreServices, values: Record<string, unknown>, config: Config): Promise<unknown>;
}

function busy(): Error {
  return conflict('Another storage migrate, prune-old or forget-missing is running on this database; wait for it to finish');
}

export const storageCommands: Record<string, StorageCommand> = {
  'storage migrate': {
    usage: 'storage migrate --to fs|s3',
    options: { to: { type: 'string' } },
    run: async (services, values, config) => {
      const to = values.to;
      if (to !== 'fs' && to !== 's3') throw badRequest('--to must be fs or s3', typeof to === 'string' ? to : undefined);
      const logger = cliLogger(config);
      const locked = await new CopyLedger(services.orm, config.upload.databaseFileMaxBytes).exclusively(async () => migrateStorage({
        orm: services.orm, config, to, xxhash: await loadXxhash(), progress: progressDisplay(process.stderr), logger,
      }));
      if (!locked) throw busy();
      const summary = locked.result;
      if (summary.failed.length + summary.missing.length === 0) return summary;
      // The summary is the answer; the error body on stderr and exit 1 tell a script that it is not done.
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
      throw conflict(`storage migrate copied ${summary.copied} objects; ${summary.failed.length} failed and ${summary.missing.length} are missing from their store: run it again once the cause is fixed (objects lost in every store: \`${FORGET_MISSING_COMMAND} --dry-run\`)`);
    },
  },
  'storage prune-old': {
    usage: 'storage prune-old',
    options: {},
    run: async (services, _values, config) => {
      const locked = await new CopyLedger(services.orm, config.upload.databaseFileMaxBytes).exclusively(() => pruneOldCopies({ orm: services.orm, config, store: services.store }));
      if (!locked) throw busy();
      return locked.result;
    },
  },
  'storage forget-missing': {
    usage: 'storage forget-missing [--dry-run] [--only-here]',
    options: { 'dry-run': { type: 'boolean' }, 'only-here': { type: 'boolean' } },
    run: async (services, values, config) => {
      const locked = await new CopyLedger(services.orm, config.upload.databaseFileMaxBytes).exclusively(() => forgetMissing({
        orm: services.orm, config, store: services.store, dryRun: values['dry-run'] === true, onlyHere: values['only-here'] === true, logger: cliLogger(config),
      }));
      if (!locked) throw busy();
      return locked.result;
    },
  },
};
