import { Injectable } from '@nestjs/common';
import { TypeOrmHealthIndicator } from '@nestjs/terminus';
import { HealthReport } from './dto/health-report.dto';

/** Reported version of the interface; kept to the reference deployment's so monitors keep matching. */
export const API_VERSION = '1.4.0';
const DATABASE_PING_TIMEOUT_MS = 1500;

@Injectable()
export class HealthService {
  constructor(private readonly database: TypeOrmHealthIndicator) {}

  async check(): Promise<HealthReport> {
    const database = await this.databaseStatus();
    return {
      status: database === 'ok' ? 'healthy' : 'unhealthy',
      version: API_VERSION,
      timestamp: new Date().toISOString(),
      checks: { database },
    };
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
