import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { DynamicModule } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { AppConfig } from '../config/app-config';

const ONE_MINUTE_MS = 60_000;

/**
 * Per-credential request budget. With REDIS_URL the counters live in Redis, so the limit holds
 * across every replica behind the load balancer; without it each process counts on its own.
 */
export function rateLimitModule(config: AppConfig): DynamicModule {
  return ThrottlerModule.forRoot({
    throttlers: [{ name: 'per-credential', ttl: ONE_MINUTE_MS, limit: config.RATE_LIMIT_PER_MINUTE }],
    storage: config.REDIS_URL ? new ThrottlerStorageRedisService(config.REDIS_URL) : undefined,
  });
}
