import type { Logger } from 'pino';

/**
 * What a CDN should drop: the public links it may hold, and the cache tags
 * (cache-tags.ts) of the files or teams, which also cover the resized images
 * cached under query variants of a link.
 */
export interface CdnPurge {
  urls: string[];
  tags: string[];
}

export const NOTHING_TO_PURGE: CdnPurge = { urls: [], tags: [] };

export function combinedPurge(purges: CdnPurge[]): CdnPurge {
  return { urls: purges.flatMap((purge) => purge.urls), tags: purges.flatMap((purge) => purge.tags) };
}

/**
 * The CDN purge hook: told the public links and cache tags of files that were
 * deleted or stopped being public, so a CDN in front of the service drops its
 * cached copies. Implementations never throw: a failed purge is logged, and
 * the change that caused it stands.
 */
export interface CdnPurger {
  purge(purge: CdnPurge): Promise<void>;
}

/** The default when CDN_PURGE_URL is unset: nothing to purge. */
export class NoopCdnPurger implements CdnPurger {
  async purge(_purge: CdnPurge): Promise<void> {}
}

export const DEFAULT_PURGE_TIMEOUT_MS = 5_000;

export interface HttpCdnPurgerOptions {
  /** Receives `POST {"urls": [...], "tags": [...]}` as JSON. */
  url: string;
  timeoutMs?: number;
  logger: Pick<Logger, 'warn'>;
  /** For tests; the global fetch otherwise. */
  fetch?: typeof fetch;
}

/** POSTs `{ urls, tags }` to CDN_PURGE_URL; any answer but 2xx, a network error or the timeout is logged, not thrown. */
export class HttpCdnPurger implements CdnPurger {
  private readonly url: string;
  private readonly timeoutMs: number;
  private readonly logger: Pick<Logger, 'warn'>;
  private readonly fetch: typeof fetch;

  constructor(options: HttpCdnPurgerOptions) {
    this.url = options.url;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_PURGE_TIMEOUT_MS;
    this.logger = options.logger;
    this.fetch = options.fetch ?? fetch;
  }

  async purge({ urls, tags }: CdnPurge): Promise<void> {
    if (urls.length === 0 && tags.length === 0) return;
    try {
      const response = await this.fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ urls, tags }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      // Drain the body so the connection can be reused.
      await response.arrayBuffer().catch(() => undefined);
      if (!response.ok) this.logger.warn({ purgeUrl: this.url, status: response.status, urls }, 'CDN purge refused');
    } catch (error) {
      this.logger.warn({ purgeUrl: this.url, err: error, urls }, 'CDN purge failed');
    }
  }
}

export function createCdnPurger(url: string | null, logger: Pick<Logger, 'warn'>): CdnPurger {
  return url ? new HttpCdnPurger({ url, logger }) : new NoopCdnPurger();
}
