import { Logger, OnModuleDestroy } from '@nestjs/common';
import Redis, { RedisOptions } from 'ioredis';
import type { InProcessRateLimitStore } from './in-process-rate-limit.store';
import type { RateLimitStore, WindowCount } from './rate-limit.store';

/** INCR, and a TTL on the window's first hit (or on a key that somehow lost its TTL). */
const HIT_SCRIPT = `
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {hits, ttl}`;

const KEY_PREFIX = 'gpucap:rate-limit:';

/**
 * Nothing waits for Redis: no offline queue and no retried commands, a short command timeout, and a
 * socket that hears nothing for two seconds is dropped, so a Redis that stops answering (rather than
 * refusing) is noticed. Reconnection backs off up to 5 s and never gives up.
 */
const REDIS_OPTIONS: RedisOptions = {
  connectTimeout: 1_000,
  commandTimeout: 75,
  socketTimeout: 2_000,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  retryStrategy: (attempt) => Math.min(100 * 2 ** attempt, 5_000),
};

export type RedisHealth = 'ok' | 'degraded';

/**
 * Counters shared by every replica through Redis. While Redis cannot be reached each replica counts
 * in its own process instead: the API keeps answering, with a per-replica budget, and the outage is
 * logged once when it starts and once when it ends.
 */
export class RedisRateLimitStore implements RateLimitStore, OnModuleDestroy {
  private readonly logger = new Logger('RateLimit');
  private readonly redis: Redis;
  private outage = false;
  private closing = false;

  constructor(
    url: string,
    private readonly fallback: InProcessRateLimitStore,
  ) {
    this.redis = new Redis(url, REDIS_OPTIONS);
    this.redis.on('error', (error: Error) => this.enterOutage(error));
    // A lost connection is an outage at once, even when Redis is back before the first reconnect
    // attempt could fail and emit 'error'.
    this.redis.on('close', () => {
      if (!this.closing)
        this.enterOutage(Object.assign(new Error('connection closed'), { code: 'ECONNCLOSED' }));
    });
    this.redis.on('ready', () => this.leaveOutage());
  }

  get health(): RedisHealth {
    return this.redis.status === 'ready' && !this.outage ? 'ok' : 'degraded';
  }

  async hit(key: string, windowMs: number): Promise<WindowCount> {
    if (this.redis.status !== 'ready') return this.fallback.hit(key, windowMs);
    try {
      const [hits, resetMs] = (await this.redis.eval(HIT_SCRIPT, 1, KEY_PREFIX + key, windowMs)) as [
        number,
        number,
      ];
      this.leaveOutage();
      return { hits, resetMs };
    } catch (error) {
      this.enterOutage(error as Error);
      return this.fallback.hit(key, windowMs);
    }
  }

  onModuleDestroy(): void {
    this.closing = true;
    this.redis.disconnect();
    this.fallback.onModuleDestroy();
  }

  private enterOutage(error: Error): void {
    // A timed-out connection is dropped at once, so the next requests skip it instead of each waiting.
    if (error.message === 'Command timed out') this.redis.disconnect(true);
    if (this.outage) return;
    this.outage = true;
    const reason = (error as { code?: string }).code ?? error.message;
    this.logger.warn({ reason }, 'Redis unavailable: rate limits are counted in-process until it returns');
  }

  private leaveOutage(): void {
    if (!this.outage) return;
    this.outage = false;
    this.logger.log('Redis available again: rate limits are shared across replicas');
  }
}
