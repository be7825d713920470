import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCorsOrigins, type CorsOrigins } from './cors-origins.ts';
import { parseTrustedProxies } from './trusted-proxies.ts';
import { settingNames, settings, type SettingName, type SettingValues } from './settings.ts';
import type { MailSettings } from '../mail/create-mail-sender.ts';

export interface Config {
  host: string;
  port: number;
  /** Service processes sharing HOST:PORT (HTTP_PROCESSES, "auto" resolved to the cores); 1: this process serves alone. */
  httpProcesses: number;
  /** Base address of this service as clients reach it; links are built from it. */
  publicUrl: string;
  dataDir: string;
  /** INSTANCE_ID: this instance's identity across restarts; null: generated once and stored in DATA_DIR. */
  instanceId: string | null;
  databaseUrl: string | null;
  databasePoolSize: number;
  storage: {
    driver: 'fs' | 's3';
    /** How often the storage is checked for /healthz (StorageHealth). */
    checkIntervalSeconds: number;
    s3: {
      endpoint: string | null;
      region: string;
      bucket: string;
      accessKeyId: string | null;
      secretAccessKey: string | null;
      forcePathStyle: boolean;
      /** Every object and multipart upload of the service lives under it; the sweeper touches nothing else. */
      keyPrefix: string;
      /** Multipart part size in bytes; each part in flight holds one in memory. */
      partSize: number;
      /** Parts of one upload sent at once. */
      queueSize: number;
    };
  };
  cdnUrl: string | null;
  /** Receives `POST {"urls": [...]}` when files are deleted or made private; null: no purging. */
  cdnPurgeUrl: string | null;
  redisUrl: string | null;
  /** Null until start-up resolves it (generated and stored in DATA_DIR when unset). */
  authSecret: string | null;
  upload: {
    concurrency: number;
    queueLimit: number;
    /** Share (0 to 1] of concurrency + queueLimit places one team may hold; past it the team gets 503 uploadBusy. */
    teamMaxShare: number;
    retryAfterSeconds: number;
    hashOffloadMinBytes: number | null;
    /** Media files of at most this many bytes go into the database with their rows; 0: none. */
    databaseFileMaxBytes: number;
    /** An upload whose body stops arriving for this long is ended with 408. */
    idleTimeoutSeconds: number;
  };
  /** On SIGTERM, how long in-flight uploads may take to finish before they are aborted. */
  shutdownGraceSeconds: number;
  /** The crash sweeper removes reservations, temp files and multipart uploads untouched for this long. */
  crashSweepMinAgeSeconds: number;
  /** An unfinished tus upload untouched this long expires (Upload-Expires) and is swept. */
  tusExpirySeconds: number;
  rateLimit: { points: number; durationSeconds: number };
  /** Failed authentications (API key or authSecret) per client address and window; past them, 429 until the window ends. */
  authFailureLimit: { points: number; durationSeconds: number };
  /** Uses of upload URLs per window: per URL and per team. */
  uploadUrlLimit: { perUrlPoints: number; perTeamPoints: number; durationSeconds: number };
  workerThreads: number;
  /** Thumbnails of image uploads (src/previews/thumbnailer.ts). */
  thumbnails: { concurrency: number; size: number; maxSourceBytes: number; maxPixels: number; ffmpegPath: string | null; maxVideoBytes: number };
  /** Resized images on request (src/previews/image-transformer.ts); their sources are bounded by `thumbnails`' maxSourceBytes and maxPixels. */
  transforms: { concurrency: number; queueLimit: number; cacheBytes: number };
  stripMetadata: { maxBytes: number; maxPixels: number };
  maxJsonBodyBytes: number;
  apiKeyCacheSeconds: number;
  /** DEFAULT_PLAN: the slug of the plan a team created without one gets. */
  defaultPlan: string;
  accounts: {
    signUpEnabled: boolean;
    /** log2 of scrypt's N for new password hashes (src/auth/password-hash.ts). */
    passwordHashCost: number;
    sessionTtlSeconds: number;
    /** Failed sign-ins per account and per client address in a window; past them, 429 until it ends. */
    signInLimit: { accountPoints: number; addressPoints: number; durationSeconds: number };
    usernameChangeCooldownSeconds: number;
  };
  /** METRICS_TOKEN: GET /metrics needs `Authorization: Bearer <token>`; null: /metrics answers loopback clients only. */
  metricsToken: string | null;
  /** CORS_ORIGINS: any origin, these origins, or none ([]: CORS off). */
  corsOrigins: CorsOrigins;
  /** TRUSTED_PROXIES: the proxies whose Forwarded / X-Forwarded-For name the client ([]: headers ignored). */
  trustedProxies: string[];
  /** ACCESS_LOG: one JSON line per request at info. */
  accessLog: boolean;
  logLevel: SettingValues['LOG_LEVEL'];
  /** Automations: webhook deliveries of events (docs/automations.md). */
  automations: AutomationSettings;
  /** Sign-in with external providers (docs/accounts.md); null: the provider is not offered. */
  oauth: OAuthSettings;
  /** Mail: SMTP when smtpUrl is set, otherwise the outbox table and the log (src/mail). */
  mail: MailSettings;
  /** How long a notification delivery (spec 2.9) is kept: its retentionUntil is this many days after it was written. */
  notificationRetentionDays: number;
}

export interface OAuthSettings {
  discord: { clientId: string; clientSecret: string; apiUrl: string; authorizeUrl: string; guildId: string | null } | null;
  google: { clientId: string; clientSecret: string; issuer: string } | null;
}

export interface AutomationSettings {
  /** Longest wait between two dispatcher runs; commits wake it at once (NOTIFY), retries at their due time. */
  dispatchIntervalMs: number;
  /** One delivery attempt (connect, send, answer) must finish within this. */
  deliveryTimeoutMs: number;
  /** Attempts of one delivery before it is marked failed. */
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Deliveries in flight at once per instance. */
  concurrency: number;
  /** Delivered and failed deliveries older than this are deleted. */
  deliveryRetentionDays: number;
  /** False: targets on loopback, private, link-local and other non-public addresses are refused. */
  allowPrivateTargets: boolean;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export const defaultConfigFile = resolve(dirname(fileURLToPath(import.meta.url)), '../../config/default.json');

type RawSettings = Partial<Record<SettingName, unknown>>;

function readSettingsFile(path: string): RawSettings {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`Cannot read configuration file ${path}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`Configuration file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`Configuration file ${path} must hold a JSON object of settings`);
  }
  for (const key of Object.keys(parsed)) {
    if (!Object.hasOwn(settings, key)) {
      throw new ConfigError(`Configuration file ${path} names an unknown setting ${key}; known settings: ${settingNames.join(', ')}`);
    }
  }
  return parsed as RawSettings;
}

/** Settings whose empty value means something (CORS_ORIGINS: CORS off), so an empty variable is not "unset". */
const EMPTY_IS_A_VALUE = new Set<SettingName>(['CORS_ORIGINS']);

function environmentSettings(env: NodeJS.ProcessEnv): RawSettings {
  const raw: RawSettings = {};
  for (const name of settingNames) {
    const value = env[name];
    // An empty variable means "unset", as shells make it easy to export one by accident.
    if (value !== undefined && (value !== '' || EMPTY_IS_A_VALUE.has(name))) raw[name] = value;
  }
  return raw;
}

const SECRET_SETTINGS = new Set<SettingName>([
  'AUTH_SECRET', 'S3_SECRET_ACCESS_KEY', 'DATABASE_URL', 'REDIS_URL', 'METRICS_TOKEN', 'OAUTH_DISCORD_CLIENT_SECRET', 'OAUTH_GOOGLE_CLIENT_SECRET', 'SMTP_URL',
]);

/** The rejected value for the error message; secrets and URLs that may carry passwords are not echoed. */
function describe(name: SettingName, value: unknown): string {
  if (SECRET_SETTINGS.has(name)) return 'a value that is not shown';
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function validate(raw: RawSettings): SettingValues {
  const values: Record<string, unknown> = {};
  for (const name of settingNames) {
    const { schema, expected } = settings[name];
    const result = schema.safeParse(raw[name] ?? null);
    if (!result.success) {
      throw new ConfigError(`Invalid configuration: ${name} must be ${expected} (got ${describe(name, raw[name])})`);
    }
    values[name] = result.data;
  }
  return values as SettingValues;
}

/** Settings that are only valid together. */
function checkCombinations(values: SettingValues): void {
  for (const provider of ['DISCORD', 'GOOGLE'] as const) {
    const [id, secret] = [`OAUTH_${provider}_CLIENT_ID`, `OAUTH_${provider}_CLIENT_SECRET`] as const;
    if ((values[id] === null) !== (values[secret] === null)) {
      throw new ConfigError(`Invalid configuration: ${id} and ${secret} must be set together (or both left unset to offer no ${provider.toLowerCase()} sign-in)`);
    }
  }
  if (values.STORAGE_DRIVER === 's3' && (values.S3_ACCESS_KEY_ID === null) !== (values.S3_SECRET_ACCESS_KEY === null)) {
    const [set, missing] = values.S3_ACCESS_KEY_ID === null ? ['S3_SECRET_ACCESS_KEY', 'S3_ACCESS_KEY_ID'] : ['S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'];
    throw new ConfigError(
      `Invalid configuration: ${missing} must be set when ${set} is (or leave both unset for the AWS default credential chain)`,
    );
  }
}

function toConfig(values: SettingValues, cwd: string): Config {
  const host = values.HOST;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    host,
    port: values.PORT,
    httpProcesses: values.HTTP_PROCESSES === 'auto' ? availableParallelism() : values.HTTP_PROCESSES,
    publicUrl: (values.PUBLIC_URL ?? `http://${urlHost}:${values.PORT}`).replace(/\/+$/, ''),
    dataDir: resolve(cwd, values.DATA_DIR),
    instanceId: values.INSTANCE_ID,
    databaseUrl: values.DATABASE_URL,
    databasePoolSize: values.DATABASE_POOL_SIZE,
    storage: {
      driver: values.STORAGE_DRIVER,
      checkIntervalSeconds: values.STORAGE_CHECK_INTERVAL_SECONDS,
      s3: {
        endpoint: values.S3_ENDPOINT,
        region: values.S3_REGION,
        bucket: values.S3_BUCKET,
        accessKeyId: values.S3_ACCESS_KEY_ID,
        secretAccessKey: values.S3_SECRET_ACCESS_KEY,
        forcePathStyle: values.S3_FORCE_PATH_STYLE,
        keyPrefix: values.S3_KEY_PREFIX,
        partSize: values.S3_PART_SIZE_MIB * 1024 * 1024,
        queueSize: values.S3_PARTS_IN_FLIGHT,
      },
    },
    cdnUrl: values.CDN_URL?.replace(/\/+$/, '') ?? null,
    cdnPurgeUrl: values.CDN_PURGE_URL,
    redisUrl: values.REDIS_URL,
    authSecret: values.AUTH_SECRET,
    upload: {
      concurrency: values.UPLOAD_CONCURRENCY,
      queueLimit: values.UPLOAD_QUEUE_LIMIT,
      teamMaxShare: values.UPLOAD_TEAM_MAX_SHARE,
      retryAfterSeconds: values.UPLOAD_RETRY_AFTER_SECONDS,
      hashOffloadMinBytes: values.HASH_OFFLOAD_MIN_BYTES,
      databaseFileMaxBytes: values.DATABASE_FILE_MAX_BYTES,
      idleTimeoutSeconds: values.UPLOAD_IDLE_TIMEOUT_SECONDS,
    },
    shutdownGraceSeconds: values.SHUTDOWN_GRACE_SECONDS,
    crashSweepMinAgeSeconds: values.CRASH_SWEEP_MIN_AGE_SECONDS,
    tusExpirySeconds: values.TUS_EXPIRY_SECONDS,
    rateLimit: { points: values.RATE_LIMIT_POINTS, durationSeconds: values.RATE_LIMIT_DURATION_SECONDS },
    authFailureLimit: { points: values.AUTH_FAILURE_LIMIT_POINTS, durationSeconds: values.AUTH_FAILURE_LIMIT_DURATION_SECONDS },
    uploadUrlLimit: {
      perUrlPoints: values.UPLOAD_URL_RATE_LIMIT_POINTS,
      perTeamPoints: values.UPLOAD_URL_TEAM_RATE_LIMIT_POINTS,
      durationSeconds: values.UPLOAD_URL_RATE_LIMIT_DURATION_SECONDS,
    },
    workerThreads: values.WORKER_THREADS ?? availableParallelism(),
    thumbnails: {
      concurrency: values.THUMBNAIL_CONCURRENCY,
      size: values.THUMBNAIL_SIZE,
      maxSourceBytes: values.THUMBNAIL_MAX_SOURCE_MIB * 1024 * 1024,
      maxPixels: values.THUMBNAIL_MAX_MEGAPIXELS * 1_000_000,
      ffmpegPath: values.FFMPEG_PATH,
      maxVideoBytes: values.THUMBNAIL_MAX_VIDEO_MIB * 1024 * 1024,
    },
    transforms: {
      concurrency: values.TRANSFORM_CONCURRENCY,
      queueLimit: values.TRANSFORM_QUEUE_LIMIT,
      cacheBytes: values.TRANSFORM_CACHE_MIB * 1024 * 1024,
    },
    stripMetadata: { maxBytes: values.STRIP_METADATA_MAX_MIB * 1024 * 1024, maxPixels: values.STRIP_METADATA_MAX_MEGAPIXELS * 1_000_000 },
    maxJsonBodyBytes: values.MAX_JSON_BODY_BYTES,
    apiKeyCacheSeconds: values.API_KEY_CACHE_SECONDS,
    defaultPlan: values.DEFAULT_PLAN,
    accounts: {
      signUpEnabled: values.SIGN_UP_ENABLED,
      passwordHashCost: values.PASSWORD_HASH_COST,
      sessionTtlSeconds: values.SESSION_TTL_DAYS * 86_400,
      signInLimit: {
        accountPoints: values.SIGN_IN_LIMIT_ACCOUNT_POINTS,
        addressPoints: values.SIGN_IN_LIMIT_ADDRESS_POINTS,
        durationSeconds: values.SIGN_IN_LIMIT_DURATION_SECONDS,
      },
      usernameChangeCooldownSeconds: values.USERNAME_CHANGE_COOLDOWN_DAYS * 86_400,
    },
    metricsToken: values.METRICS_TOKEN,
    corsOrigins: parseCorsOrigins(values.CORS_ORIGINS),
    trustedProxies: parseTrustedProxies(values.TRUSTED_PROXIES),
    accessLog: values.ACCESS_LOG,
    logLevel: values.LOG_LEVEL,
    automations: {
      dispatchIntervalMs: values.AUTOMATION_DISPATCH_INTERVAL_MS,
      deliveryTimeoutMs: values.AUTOMATION_DELIVERY_TIMEOUT_MS,
      maxAttempts: values.AUTOMATION_MAX_ATTEMPTS,
      backoffBaseMs: values.AUTOMATION_BACKOFF_BASE_MS,
      backoffMaxMs: values.AUTOMATION_BACKOFF_MAX_MS,
      concurrency: values.AUTOMATION_CONCURRENCY,
      deliveryRetentionDays: values.AUTOMATION_DELIVERY_RETENTION_DAYS,
      allowPrivateTargets: values.AUTOMATION_ALLOW_PRIVATE_TARGETS,
    },
    oauth: {
      discord: values.OAUTH_DISCORD_CLIENT_ID && values.OAUTH_DISCORD_CLIENT_SECRET
        ? {
          clientId: values.OAUTH_DISCORD_CLIENT_ID,
          clientSecret: values.OAUTH_DISCORD_CLIENT_SECRET,
          apiUrl: values.OAUTH_DISCORD_API_URL.replace(/\/+$/, ''),
          authorizeUrl: values.OAUTH_DISCORD_AUTHORIZE_URL,
          guildId: values.OAUTH_DISCORD_GUILD_ID,
        }
        : null,
      google: values.OAUTH_GOOGLE_CLIENT_ID && values.OAUTH_GOOGLE_CLIENT_SECRET
        ? { clientId: values.OAUTH_GOOGLE_CLIENT_ID, clientSecret: values.OAUTH_GOOGLE_CLIENT_SECRET, issuer: values.OAUTH_GOOGLE_ISSUER }
        : null,
    },
    mail: {
      smtpUrl: values.SMTP_URL,
      from: values.MAIL_FROM,
      sendAttempts: values.MAIL_SEND_ATTEMPTS,
      backoffMs: values.MAIL_BACKOFF_MS,
      retryIntervalMs: values.MAIL_RETRY_INTERVAL_SECONDS * 1000,
      provider: values.MAIL_PROVIDER,
    },
    notificationRetentionDays: values.NOTIFICATION_RETENTION_DAYS,
  };
}

export interface LoadConfigOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Settings applied after the environment; tests use them to override single values. */
  overrides?: RawSettings;
}

/**
 * Layers, later wins: `config/default.json`, the file named by `CONFIG_FILE`,
 * environment variables, then `overrides`. Throws ConfigError naming the first
 * invalid setting and the form it expects.
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const layers: RawSettings[] = [readSettingsFile(defaultConfigFile)];
  if (env.CONFIG_FILE) layers.push(readSettingsFile(resolve(cwd, env.CONFIG_FILE)));
  layers.push(environmentSettings(env));
  if (options.overrides) layers.push(options.overrides);
  const values = validate(Object.assign({}, ...layers));
  checkCombinations(values);
  return toConfig(values, cwd);
}
