import { Inject, Injectable } from '@nestjs/common';
import { TypeOrmHealthIndicator } from '@nestjs/terminus';
import { API_VERSION } from '../core/version';
import { RATE_LIMIT_STORE, RateLimitStore } from '../common/rate-limit/rate-limit.store';
import { RedisRateLimitStore } from '../common/rate-limit/redis-rate-limit.store';
import { ReadReplicas } from '../database/read-replicas';
import { HealthChecksDto, HealthReport, LivenessReport } from './dto/health-report.dto';

const DATABASE_PING_TIMEOUT_MS = 1500;

@Injectable()
export class HealthService {
  constructor(
    private readonly database: TypeOrmHealthIndicator,
    @Inject(RATE_LIMIT_STORE) private readonly rateLimitStore: RateLimitStore,
    private readonly readReplicas: ReadReplicas,
  ) {}

  /** Readiness: whether this replica can answer data requests, which needs the database. */
  async check(): Promise<HealthReport> {
    const checks: HealthChecksDto = { database: await this.databaseStatus() };
    // Redis's state is what the rate limiter last saw: reading it never waits on Redis.
    if (this.rateLimitStore instanceof RedisRateLimitStore) checks.redis = this.rateLimitStore.health;
    // What the last lag probe found (every second): reading it never waits on a replica.
    if (this.readReplicas.configured) checks.replicas = this.readReplicas.report();
    // Replicas in the read pool go on answering while the primary is away: still ready to serve reads.
    const readable = checks.database === 'ok' || (checks.replicas ?? []).some((replica) => replica.in_use);
    return {
      status: readable ? 'healthy' : 'unhealthy',
      version: API_VERSION,
      timestamp: new Date().toISOString(),
      checks,
    };
  }

  /** Liveness: the process and its event loop; it depends on nothing outside, so a restart cannot fix it. */
  live(): LivenessReport {
    return { status: 'alive', version: API_VERSION, timestamp: new Date().toISOString() };
  }

  private async databaseStatus(): Promise<'ok' | 'down'> {
    try {
      const result = await this.database.pingCheck('database', { timeout: DATABASE_PING_TIMEOUT_MS });
      return result.database?.status === 'up' ? 'ok' : 'down';
    } catch {
      return 'down';
    }
  }
}
