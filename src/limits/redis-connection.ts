import type { Redis } from 'ioredis';
import type { Logger } from '../logging/logger.ts';

/**
 * The one Redis connection every rate limiter of a process shares (REDIS_URL). ioredis is imported
 * only when Redis is configured. Commands fail at once while it is down (no offline queue), so the
 * limiters fall back to their in-memory insurance limiters instead of waiting.
 */
export async function connectRedis(url: string, logger: Logger): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: false });
  redis.on('error', (error: Error) => logger.warn({ err: error }, 'redis unavailable; rate limits fall back to this instance'));
  return redis;
}
