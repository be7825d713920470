import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { tooManyRequests } from '../errors/errors.ts';

export interface RateLimitOptions {
  points: number;
  durationSeconds: number;
  /** The process's shared connection (redis-connection.ts) when REDIS_URL is set; counters in memory otherwise. */
  redis: Redis | null;
  /** Namespace of the counters (in Redis, the key prefix); one per limiter. */
  keyPrefix?: string;
  /** The 429's message. */
  message?: string;
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
 *
 * Also counts failed authentications per client address (`count` and
 * `refuseIfExhausted`, see ApiKeyAuthenticator and requireOperator).
 */
export class RequestRateLimiter {
  private readonly limiter: RateLimiterAbstract;
  private readonly points: number;
  private readonly message: string | undefined;

  constructor(options: RateLimitOptions) {
    this.points = options.points;
    this.message = options.message;
    const base = { points: options.points, duration: options.durationSeconds, keyPrefix: options.keyPrefix ?? 'media-rl' };
    if (!options.redis) {
      this.limiter = new RateLimiterMemory(base);
      return;
    }
    this.limiter = new RateLimiterRedis({
      ...base,
      storeClient: options.redis,
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
      const error = this.refusal(rejection);
      Object.assign(error.headers, headers(this.points, rejection));
      throw error;
    }
  }

  /** Throws 429 with Retry-After (no RateLimit headers) while `key` has used up its points; counts nothing. */
  async refuseIfExhausted(key: string): Promise<void> {
    const result = await this.limiter.get(key);
    if (result && result.consumedPoints >= this.points && result.msBeforeNext > 0) throw this.refusal(result);
  }

  /** Counts one point of `key` without refusing anything (the next refuseIfExhausted does). */
  async count(key: string): Promise<void> {
    try {
      await this.limiter.consume(key);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
    }
  }

  private refusal(result: RateLimiterRes) {
    return tooManyRequests(Math.max(1, Math.ceil(result.msBeforeNext / 1000)), this.message);
  }
}
