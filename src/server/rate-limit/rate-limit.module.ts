import { DynamicModule, Module } from '@nestjs/common';
import { AppConfig } from '../../core/config/app-config';
import { InProcessRateLimitStore } from '../../common/rate-limit/in-process-rate-limit.store';
import { RATE_LIMIT_STORE, RateLimitStore } from '../../common/rate-limit/rate-limit.store';
import { RateLimiter } from '../../common/rate-limit/rate-limiter';
import { RedisRateLimitStore } from '../../common/rate-limit/redis-rate-limit.store';

/**
 * Request budgets. With REDIS_URL the counters live in Redis, so a limit holds across every replica
 * behind the load balancer; without it (or while Redis is away) each process counts on its own,
 * with the same fixed-window semantics.
 */
@Module({})
export class RateLimitModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: RateLimitModule,
      global: true,
      providers: [{ provide: RATE_LIMIT_STORE, useFactory: () => createStore(config) }, RateLimiter],
      exports: [RATE_LIMIT_STORE, RateLimiter],
    };
  }
}

function createStore(config: AppConfig): RateLimitStore {
  const inProcess = new InProcessRateLimitStore();
  return config.REDIS_URL ? new RedisRateLimitStore(config.REDIS_URL, inProcess) : inProcess;
}
