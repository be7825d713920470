import { InstanceIdentity } from '../bootstrap/instance-identity.ts';
import type { Config } from '../config/config.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded-postgres.ts';
import { checkDefaultPlan } from '../domain/plans/default-plan.ts';
import type { Logger } from '../logging/logger.ts';
import type { TxtResolver } from '../domain/portal/txt-resolver.ts';
import { openDomainDatabase } from './database.ts';
import { closeServices, composeServices, type CoreServices, type Services } from './services.ts';

export interface BackendOptions {
  /** The server claims its instance id (InstanceIdentity) for the reservations it makes; the CLI does not. */
  claimIdentity?: boolean;
  /** See startEmbeddedPostgres' `takeOver` (default true). */
  takeOverEmbeddedDatabase?: boolean;
  /** See ComposeOptions' `txtResolver`. */
  txtResolver?: TxtResolver;
}

/** Database, migrations, seed data and the composed services: what both the server and the CLI open. */
export class Backend<S extends CoreServices = CoreServices> {
  readonly services: S;
  readonly databaseUrl: string;
  private readonly embedded: EmbeddedDatabase | null;

  private constructor(services: S, databaseUrl: string, embedded: EmbeddedDatabase | null) {
    this.services = services;
    this.databaseUrl = databaseUrl;
    this.embedded = embedded;
  }

  /** `authSecret`: the server's resolved operator secret, for what it signs (ServerServices); the CLI has none. */
  static async open(config: Config, logger: Logger, options: BackendOptions & { authSecret: string }): Promise<Backend<Services>>;
  static async open(config: Config, logger: Logger, options?: BackendOptions & { authSecret?: undefined }): Promise<Backend<CoreServices>>;
  static async open(config: Config, logger: Logger, options: BackendOptions & { authSecret?: string } = {}): Promise<Backend<CoreServices>> {
    const embedded = config.databaseUrl
      ? null
      : await startEmbeddedPostgres({
        dataDir: config.dataDir, databaseName: 'media', takeOver: options.takeOverEmbeddedDatabase, log: (line) => logger.debug({ postgres: line }),
      });
    const databaseUrl = config.databaseUrl ?? embedded!.url;
    let orm: Awaited<ReturnType<typeof openDomainDatabase>> | null = null;
    let identity: InstanceIdentity | null = null;
    try {
      orm = await openDomainDatabase({ databaseUrl, poolSize: config.databasePoolSize, logger });
      await checkDefaultPlan(orm, config.defaultPlan);
      if (options.claimIdentity) {
        identity = await InstanceIdentity.claim({ databaseUrl, dataDir: config.dataDir, configured: config.instanceId, logger });
        logger.info({ instanceId: identity.instanceId, bootId: identity.bootId }, 'instance identity claimed');
      }
      const services = options.authSecret
        ? await composeServices({ config, logger, orm, identity, authSecret: options.authSecret, txtResolver: options.txtResolver })
        : await composeServices({ config, logger, orm, identity, authSecret: null, txtResolver: options.txtResolver });
      return new Backend(services, databaseUrl, embedded);
    } catch (error) {
      await identity?.release();
      await orm?.close().catch(() => undefined);
      await embedded?.stop().catch(() => undefined);
      throw error;
    }
  }

  async close(): Promise<void> {
    await closeServices(this.services);
    await this.embedded?.stop();
  }
}
