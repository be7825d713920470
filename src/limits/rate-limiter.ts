import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Logger } from '../logging/logger.ts';
import { tooManyRequests } from '../errors/errors.ts';

export interface RateLimitOptions {
  points: number;
  durationSeconds: number;
  redisUrl: string | null;
  logger: Logger;
}

/** The IETF draft RateLimit headers plus their widely used X- forms. */
function headers(points: number, result: RateLimiterRes): Record<string, string> {
  const reset = String(Math.max(1, Math.ceil(result.msBeforeNext / 1000)));
  const remaining = String(Math.max(0, result.remainingPoints));
  return {
    'RateLimit-Limit': String(points),
    'RateLimit-Remaining': remaining,
    'RateLimit-Reset': reset,
    'X-RateLimit-Limit': String(points),
    'X-RateLimit-Remaining': remaining,
    'X-RateLimit-Reset': reset,
  };
}

/**
 * Per-key request limit (spec 8: 32 requests per 10 s). In process by default;
 * with REDIS_URL the counters live in Redis and hold across instances. When
 * Redis is unreachable, each instance falls back to its own in-memory limiter
 * (the library's insurance limiter): limits then hold per instance instead of
 * across the fleet, and uploads keep working.
 */
export class RequestRateLimiter {
  private readonly limiter: RateLimiterAbstract;
  private readonly points: number;
  private readonly redis: Redis | null;

  constructor(options: RateLimitOptions) {
    this.points = options.points;
    const base = { points: options.points, duration: options.durationSeconds, keyPrefix: 'media-rl' };
    if (!options.redisUrl) {
      this.redis = null;
      this.limiter = new RateLimiterMemory(base);
      return;
    }
    this.redis = new Redis(options.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      lazyConnect: false,
    });
    this.redis.on('error', (error: Error) => options.logger.warn({ err: error }, 'redis unavailable; rate limits fall back to this instance'));
    this.limiter = new RateLimiterRedis({
      ...base,
      storeClient: this.redis,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new RateLimiterMemory(base),
    });
  }

  /** Counts one request of `key`; throws 429 with Retry-After beyond the limit. Returns headers for the response. */
  async consume(key: string): Promise<Record<string, string>> {
    try {
      const result = await this.limiter.consume(key);
      return headers(this.points, result);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const error = tooManyRequests(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
      Object.assign(error.headers, headers(this.points, rejection));
      throw error;
    }
  }

  async close(): Promise<void> {
    this.redis?.disconnect();
  }
}
