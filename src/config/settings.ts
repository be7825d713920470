import { z } from 'zod';
import { MAX_PASSWORD_HASH_COST, MIN_PASSWORD_HASH_COST } from '../auth/password-hash.ts';
import { parseCorsOrigins } from './cors-origins.ts';
import { parseTrustedProxies } from './trusted-proxies.ts';

/**
 * Every setting of the service, keyed by the name it has everywhere: in
 * `config/default.json`, in the file named by `CONFIG_FILE`, and as an
 * environment variable. One name per setting keeps operators from guessing.
 *
 * `expected` is what a start-up error says the value must look like.
 */
interface Setting<T> {
  schema: z.ZodType<T>;
  expected: string;
}

function setting<T>(schema: z.ZodType<T>, expected: string): Setting<T> {
  return { schema, expected };
}

const integer = (min: number, max: number) =>
  z.union([z.number(), z.string().regex(/^-?\d+$/).transform(Number)]).pipe(z.number().int().min(min).max(max));

const fraction = (exclusiveMin: number, max: number) =>
  z.union([z.number(), z.string().regex(/^\d*\.?\d+$/).transform(Number)]).pipe(z.number().gt(exclusiveMin).max(max));

const boolean = z.union([
  z.boolean(),
  z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1'),
]);

/** A plan's slug, as the plan table holds it. */
export const PLAN_SLUG = /^[A-Za-z0-9_.-]{1,32}$/;

const httpUrl = z.url({ protocol: /^https?$/ });
const postgresUrl = z.url({ protocol: /^postgres(ql)?$/ });
const redisUrl = z.url({ protocol: /^rediss?$/ });

/** A string that `parse` accepts (it throws on what it does not). */
const parsedBy = (parse: (value: string) => unknown) => z.string().refine((value) => {
  try {
    parse(value);
    return true;
  } catch {
    return false;
  }
});

export const settings = {
  HOST: setting(z.string().min(1), 'a host name or IP address'),
  PORT: setting(integer(0, 65535), 'an integer from 0 to 65535'),
  HTTP_PROCESSES: setting(z.union([z.literal('auto'), integer(1, 1024)]), 'an integer from 1 to 1024, or "auto" for the number of cores'),
  PUBLIC_URL: setting(httpUrl.nullable(), 'an http(s) URL, the base address clients reach this service at'),
  DATA_DIR: setting(z.string().min(1), 'a directory path'),
  // Unset: an id generated once and stored in DATA_DIR. Must differ between live instances.
  INSTANCE_ID: setting(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/).nullable(), '1 to 64 characters of A-Z a-z 0-9 _ . -, or unset for an id stored in DATA_DIR'),
  DATABASE_URL: setting(postgresUrl.nullable(), 'a postgres:// connection URL, or unset for the embedded database'),
  DATABASE_POOL_SIZE: setting(integer(1, 1000), 'an integer from 1 to 1000'),
  STORAGE_DRIVER: setting(z.enum(['fs', 's3']), '"fs" or "s3"'),
  STORAGE_CHECK_INTERVAL_SECONDS: setting(integer(1, 3600), 'an integer from 1 to 3600 (seconds between storage checks for /healthz)'),
  S3_ENDPOINT: setting(httpUrl.nullable(), 'an http(s) URL, or unset for AWS'),
  S3_REGION: setting(z.string().min(1), 'an S3 region name'),
  S3_BUCKET: setting(z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/), 'an S3 bucket name (3-63 of a-z 0-9 . -)'),
  S3_ACCESS_KEY_ID: setting(z.string().min(1).nullable(), 'an access key id, or unset for the AWS default chain'),
  S3_SECRET_ACCESS_KEY: setting(z.string().min(1).nullable(), 'a secret access key, or unset for the AWS default chain'),
  S3_FORCE_PATH_STYLE: setting(boolean, 'true or false'),
  S3_KEY_PREFIX: setting(z.string().regex(/^([A-Za-z0-9_.-]+\/)*$/), 'a key prefix ending in / (such as "media-service/"), or empty'),
  S3_PART_SIZE_MIB: setting(integer(5, 5120), 'an integer from 5 to 5120 (MiB; S3 parts are at least 5 MiB)'),
  S3_PARTS_IN_FLIGHT: setting(integer(1, 64), 'an integer from 1 to 64'),
  CDN_URL: setting(httpUrl.nullable(), 'an http(s) URL, or unset to serve files from this service'),
  CDN_PURGE_URL: setting(httpUrl.nullable(), 'an http(s) URL that receives POST {"urls": [...]} to purge the CDN, or unset for no purging'),
  REDIS_URL: setting(redisUrl.nullable(), 'a redis:// URL, or unset for in-process rate limits'),
  AUTH_SECRET: setting(z.string().min(16).nullable(), 'a string of at least 16 characters, or unset to generate one'),
  UPLOAD_CONCURRENCY: setting(integer(1, 10_000), 'an integer from 1 to 10000'),
  UPLOAD_QUEUE_LIMIT: setting(integer(0, 100_000), 'an integer from 0 to 100000'),
  // Of UPLOAD_CONCURRENCY + UPLOAD_QUEUE_LIMIT places, the share one team may hold (running and waiting).
  UPLOAD_TEAM_MAX_SHARE: setting(fraction(0, 1), 'a number above 0 and at most 1 (a share of UPLOAD_CONCURRENCY + UPLOAD_QUEUE_LIMIT)'),
  UPLOAD_RETRY_AFTER_SECONDS: setting(integer(1, 3600), 'an integer from 1 to 3600'),
  // uWebSockets.js closes a connection idle for 10 s on its own (no response): ours must come first to answer 408.
  UPLOAD_IDLE_TIMEOUT_SECONDS: setting(integer(1, 9), 'an integer from 1 to 9 (uWebSockets.js drops a connection idle for 10 s)'),
  SHUTDOWN_GRACE_SECONDS: setting(integer(0, 3600), 'an integer from 0 to 3600'),
  // Live uploads refresh their reservation every minute: anything much below 10 minutes risks sweeping a live upload.
  CRASH_SWEEP_MIN_AGE_SECONDS: setting(integer(1, 7 * 86_400), 'an integer from 1 to 604800'),
  // An unfinished resumable (tus) upload untouched this long expires; the crash sweep then removes its bytes and reservation.
  TUS_EXPIRY_SECONDS: setting(integer(60, 30 * 86_400), 'an integer from 60 to 2592000'),
  // Media files of at most this many bytes go into the database with their rows (src/storage/db/); 0: every file to the object store.
  DATABASE_FILE_MAX_BYTES: setting(integer(0, 1024 * 1024), 'an integer from 0 to 1048576 (bytes; 0: no file kept in the database)'),
  HASH_OFFLOAD_MIN_BYTES: setting(integer(0, Number.MAX_SAFE_INTEGER).nullable(), 'a number of bytes, or unset to hash every upload inline'),
  RATE_LIMIT_POINTS: setting(integer(1, 1_000_000), 'an integer from 1 to 1000000'),
  RATE_LIMIT_DURATION_SECONDS: setting(integer(1, 86_400), 'an integer from 1 to 86400'),
  // Failed authentications (API key or authSecret) one client address may make per window before 429.
  AUTH_FAILURE_LIMIT_POINTS: setting(integer(1, 1_000_000), 'an integer from 1 to 1000000'),
  AUTH_FAILURE_LIMIT_DURATION_SECONDS: setting(integer(1, 86_400), 'an integer from 1 to 86400'),
  // Uses of upload URLs (no key to limit): per URL and per team, per window, so a leaked URL cannot be hammered.
  UPLOAD_URL_RATE_LIMIT_POINTS: setting(integer(1, 1_000_000), 'an integer from 1 to 1000000'),
  UPLOAD_URL_TEAM_RATE_LIMIT_POINTS: setting(integer(1, 1_000_000), 'an integer from 1 to 1000000'),
  UPLOAD_URL_RATE_LIMIT_DURATION_SECONDS: setting(integer(1, 86_400), 'an integer from 1 to 86400'),
  WORKER_THREADS: setting(integer(1, 256).nullable(), 'an integer from 1 to 256, or unset for the number of cores'),
  // Thumbnails of image uploads (src/previews): made this many at a time per instance in the worker pool; 0: this instance makes none.
  THUMBNAIL_CONCURRENCY: setting(integer(0, 64), 'an integer from 0 to 64 (0: this instance makes no thumbnails)'),
  THUMBNAIL_SIZE: setting(integer(32, 1024), 'an integer from 32 to 1024 (pixels on the long side)'),
  THUMBNAIL_MAX_SOURCE_MIB: setting(integer(1, 1024), 'an integer from 1 to 1024 (MiB; larger images get no thumbnail)'),
  THUMBNAIL_MAX_MEGAPIXELS: setting(integer(1, 1000), 'an integer from 1 to 1000 (images of more pixels get no thumbnail)'),
  // Video posters need an ffmpeg binary (Debian's package); unset or not found: videos get no thumbnail.
  FFMPEG_PATH: setting(z.string().min(1).nullable(), 'the ffmpeg command or its path, or unset for no video posters'),
  THUMBNAIL_MAX_VIDEO_MIB: setting(integer(1, 65_536), 'an integer from 1 to 65536 (MiB; larger videos get no poster)'),
  // Resized images on request (src/previews/image-transformer.ts); the THUMBNAIL_MAX_* bounds apply to their sources too.
  TRANSFORM_CONCURRENCY: setting(integer(1, 64), 'an integer from 1 to 64 (images resized at once per service process)'),
  TRANSFORM_QUEUE_LIMIT: setting(integer(0, 10_000), 'an integer from 0 to 10000 (resizes waiting per service process; more answer 503)'),
  TRANSFORM_CACHE_MIB: setting(integer(0, 1_048_576), 'an integer from 0 to 1048576 (MiB of resized images kept in storage; 0: none kept)'),
  // Metadata stripping (src/uploads/metadata): the largest image it takes (each strip holds one in memory) and, when it must be turned upright, its pixels.
  STRIP_METADATA_MAX_MIB: setting(integer(1, 1024), 'an integer from 1 to 1024 (MiB; larger images asked to be stripped are refused)'),
  STRIP_METADATA_MAX_MEGAPIXELS: setting(integer(1, 1000), 'an integer from 1 to 1000 (images of more pixels that must be turned upright are refused)'),
  MAX_JSON_BODY_BYTES: setting(integer(1024, 64 * 1024 * 1024), 'an integer from 1024 to 67108864'),
  API_KEY_CACHE_SECONDS: setting(integer(0, 3600), 'an integer from 0 to 3600'),
  // The plan of a team created without one; start-up checks that the plan exists once the database is up.
  DEFAULT_PLAN: setting(z.string().regex(PLAN_SLUG), 'a plan slug (1 to 32 characters of a-z A-Z 0-9 _ . -) such as free or enterprise'),
  SIGN_UP_ENABLED: setting(boolean, 'true or false'),
  PASSWORD_HASH_COST: setting(
    integer(MIN_PASSWORD_HASH_COST, MAX_PASSWORD_HASH_COST),
    `an integer from ${MIN_PASSWORD_HASH_COST} to ${MAX_PASSWORD_HASH_COST} (log2 of scrypt's N: 17 = 128 MiB per hash)`,
  ),
  SESSION_TTL_DAYS: setting(integer(1, 365), 'an integer from 1 to 365 (days a session lives after its last use)'),
  SIGN_IN_LIMIT_ACCOUNT_POINTS: setting(integer(1, 1_000_000), 'an integer from 1 to 1000000'),
  SIGN_IN_LIMIT_ADDRESS_POINTS: setting(integer(1, 1_000_000), 'an integer from 1 to 1000000'),
  SIGN_IN_LIMIT_DURATION_SECONDS: setting(integer(1, 86_400), 'an integer from 1 to 86400'),
  USERNAME_CHANGE_COOLDOWN_DAYS: setting(integer(0, 365), 'an integer from 0 to 365'),
  METRICS_TOKEN: setting(
    z.string().regex(/^[\x21-\x7e]{16,}$/).nullable(),
    'at least 16 printable ASCII characters without spaces, or unset to serve /metrics to loopback clients only',
  ),
  // Empty turns CORS off; unlike other settings, an empty environment variable counts (config.ts).
  CORS_ORIGINS: setting(parsedBy(parseCorsOrigins), '* or a comma-separated list of origins such as https://cfx-nui-screenshot-basic, or empty to turn CORS off'),
  TRUSTED_PROXIES: setting(
    parsedBy(parseTrustedProxies),
    'a comma-separated list of IP addresses and CIDR ranges (such as 127.0.0.1,10.0.0.0/8) of the proxies whose forwarding headers name the client, or empty for none',
  ),
  ACCESS_LOG: setting(boolean, 'true or false'),
  LOG_LEVEL: setting(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'one of fatal, error, warn, info, debug, trace, silent'),
  // Automations (webhook deliveries): see docs/automations.md.
  AUTOMATION_DISPATCH_INTERVAL_MS: setting(integer(10, 3_600_000), 'an integer from 10 to 3600000 (milliseconds)'),
  AUTOMATION_DELIVERY_TIMEOUT_MS: setting(integer(100, 120_000), 'an integer from 100 to 120000 (milliseconds)'),
  AUTOMATION_MAX_ATTEMPTS: setting(integer(1, 100), 'an integer from 1 to 100'),
  AUTOMATION_BACKOFF_BASE_MS: setting(integer(1, 86_400_000), 'an integer from 1 to 86400000 (milliseconds)'),
  AUTOMATION_BACKOFF_MAX_MS: setting(integer(1, 7 * 86_400_000), 'an integer from 1 to 604800000 (milliseconds)'),
  AUTOMATION_CONCURRENCY: setting(integer(1, 1000), 'an integer from 1 to 1000'),
  AUTOMATION_DELIVERY_RETENTION_DAYS: setting(integer(1, 3650), 'an integer from 1 to 3650'),
  AUTOMATION_ALLOW_PRIVATE_TARGETS: setting(boolean, 'true or false'),
  // Sign-in with Discord and Google (docs/accounts.md): a provider is offered only when its id and secret are both set.
  // Plain http provider URLs work only towards loopback hosts (a provider running inside a test).
  OAUTH_DISCORD_CLIENT_ID: setting(z.string().min(1).nullable(), 'the Discord application\'s client id, or unset to offer no Discord sign-in'),
  OAUTH_DISCORD_CLIENT_SECRET: setting(z.string().min(1).nullable(), 'the Discord application\'s client secret, or unset'),
  OAUTH_DISCORD_API_URL: setting(httpUrl, 'an http(s) URL: Discord\'s API base (token at {url}/oauth2/token, user at {url}/users/@me)'),
  OAUTH_DISCORD_AUTHORIZE_URL: setting(httpUrl, 'an http(s) URL: Discord\'s authorization page'),
  OAUTH_DISCORD_GUILD_ID: setting(z.string().regex(/^\d{17,20}$/).nullable(), 'a Discord guild (server) id, 17-20 digits, or unset to read no guild membership at sign-in'),
  OAUTH_GOOGLE_CLIENT_ID: setting(z.string().min(1).nullable(), 'the Google OAuth client id, or unset to offer no Google sign-in'),
  OAUTH_GOOGLE_CLIENT_SECRET: setting(z.string().min(1).nullable(), 'the Google OAuth client secret, or unset'),
  OAUTH_GOOGLE_ISSUER: setting(httpUrl, 'an http(s) URL: the OpenID Connect issuer (discovery at {url}/.well-known/openid-configuration)'),
  // Mail (src/mail): SMTP when SMTP_URL is set, otherwise the mail_outbox table and the log.
  SMTP_URL: setting(z.url({ protocol: /^smtps?$/ }).nullable(), 'an smtp:// or smtps:// URL (user and password in it if needed), or unset to keep mail in the outbox'),
  MAIL_FROM: setting(z.string().min(3).max(320), 'a From address such as "Media service <no-reply@example.com>"'),
  MAIL_SEND_ATTEMPTS: setting(integer(1, 10), 'an integer from 1 to 10'),
  MAIL_BACKOFF_MS: setting(integer(0, 60_000), 'an integer from 0 to 60000 (milliseconds)'),
  MAIL_RETRY_INTERVAL_SECONDS: setting(integer(0, 86_400), 'an integer from 0 to 86400 (0: no retry job)'),
  // Notification deliveries (spec 2.9; docs/workspace.md): the provider their mail rows name, and how long a row is kept.
  MAIL_PROVIDER: setting(z.enum(['SES', 'BREVO']), '"SES" or "BREVO": the mail service behind SMTP_URL, as notification deliveries name it'),
  NOTIFICATION_RETENTION_DAYS: setting(integer(1, 3650), 'an integer from 1 to 3650'),
};

export type SettingName = keyof typeof settings;

export type SettingValues = { [K in SettingName]: z.output<(typeof settings)[K]['schema']> };

export const settingNames = Object.keys(settings) as SettingName[];
