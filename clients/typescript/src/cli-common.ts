// What the CLI's commands share: their streams, usage errors, and the service, team and key to use.
import { MediaClient } from './client.ts';

export interface CliIo {
  argv: string[];
  env: Record<string, string | undefined>;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

/** A mistake in the command line: exit status 2, with the usage text. */
export class UsageError extends Error {}

export const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  team: { type: 'string' },
  key: { type: 'string' },
} as const;

export const CONNECTION_USAGE = `  --url <url>          the service (or MEDIA_URL)
  --team <id>          the team id (or MEDIA_TEAM)
  --key <key>          a team API key (or MEDIA_KEY)`;

export interface Connection {
  url: string;
  team: string;
  key: string;
}

/** --url, --team and --key, or MEDIA_URL, MEDIA_TEAM and MEDIA_KEY; all three are required. */
export function connectionOf(values: { url?: string; team?: string; key?: string }, env: CliIo['env']): Connection {
  const url = values.url ?? env.MEDIA_URL;
  const team = values.team ?? env.MEDIA_TEAM;
  const key = values.key ?? env.MEDIA_KEY;
  if (!url) throw new UsageError('--url or MEDIA_URL is required');
  if (!team) throw new UsageError('--team or MEDIA_TEAM is required');
  if (!key) throw new UsageError('--key or MEDIA_KEY is required');
  return { url, team, key };
}

export function clientOf(connection: Connection): MediaClient {
  return new MediaClient({ baseUrl: connection.url, teamId: connection.team, apiKey: connection.key, userAgent: 'media-upload-cli' });
}

/** A whole number from `min`, or a usage error naming the option. */
export function wholeNumber(value: string | undefined, option: string, fallback: number, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < min || number > max) throw new UsageError(`${option} must be a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}`);
  return number;
}
