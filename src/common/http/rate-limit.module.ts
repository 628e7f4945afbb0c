import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { DynamicModule } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { AppConfig } from '../config/app-config';
import { FixedWindowThrottlerStorage } from './fixed-window-throttler.storage';

const ONE_MINUTE_MS = 60_000;

/**
 * Per-credential request budget. With REDIS_URL the counters live in Redis, so the limit holds
 * across every replica behind the load balancer; without it each process counts on its own, with
 * the same fixed-window semantics.
 */
export function rateLimitModule(config: AppConfig): DynamicModule {
  return ThrottlerModule.forRoot({
    throttlers: [{ name: 'per-credential', ttl: ONE_MINUTE_MS, limit: config.RATE_LIMIT_PER_MINUTE }],
    storage: config.REDIS_URL
      ? new ThrottlerStorageRedisService(config.REDIS_URL)
      : new FixedWindowThrottlerStorage(),
    // One budget per credential across every route (the default key is per route, and hashed).
    generateKey: (_context, tracker, throttlerName) => `${throttlerName}:${tracker}`,
  });
}
