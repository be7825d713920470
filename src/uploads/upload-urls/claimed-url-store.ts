import type { Logger } from 'pino';
import type { Metrics } from '../../observability/metrics.ts';
import type { UploadUrlService } from './upload-url.service.ts';

/**
 * Runs an upload URL's store step holding the URL's claim (409 while another use runs, 410 once
 * used): consumed once the file is committed as `mediaId`, released when nothing was.
 */
export async function storeWithClaimedUrl<Result>(
  deps: { uploadUrls: UploadUrlService; metrics: Pick<Metrics, 'uploadUrlsUsed'> },
  log: Pick<Logger, 'warn'>,
  { teamId, urlId, mediaId }: { teamId: string; urlId: string; mediaId: string },
  store: () => Promise<Result>,
): Promise<Result> {
  await deps.uploadUrls.claim(teamId, urlId);
  let committed = false;
  try {
    const result = await store();
    committed = true;
    deps.metrics.uploadUrlsUsed.inc();
    // Should this fail, the URL stays claimed: never usable again, which is what a used URL is.
    await deps.uploadUrls.consume(urlId, mediaId).catch((error: unknown) => log.warn({ err: error, urlId }, 'upload URL not marked used'));
    return result;
  } finally {
    if (!committed) {
      // Nothing was stored: the holder may retry with the same URL until it expires.
      await deps.uploadUrls.release(urlId, mediaId).catch((error: unknown) => log.warn({ err: error, urlId }, 'upload URL not released'));
    }
  }
}
