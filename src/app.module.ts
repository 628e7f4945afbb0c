import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CapacityModule } from './capacity/capacity.module';
import { AuthModule } from './common/auth/auth.module';
import { CredentialGuard } from './common/auth/credential.guard';
import { AppConfig } from './common/config/app-config';
import { ClockModule } from './common/clock';
import { AppConfigModule } from './common/config/config.module';
import { ApiExceptionFilter } from './common/http/api-exception.filter';
import { ContractValidationPipe } from './common/http/contract-validation.pipe';
import { EnvelopeInterceptor } from './common/http/envelope.interceptor';
import { CredentialRateLimitGuard } from './common/rate-limit/credential-rate-limit.guard';
import { RateLimitModule } from './common/rate-limit/rate-limit.module';
import { dataSourceOptions } from './database/data-source-options';
import { HealthModule } from './health/health.module';
import { MetricsModule } from './metrics/metrics.module';
import { WorkloadsModule } from './workloads/workloads.module';

@Module({})
export class AppModule {
  /** The database URL is resolved before the module is built (it may be the embedded database's). */
  static forRoot(config: AppConfig, databaseUrl: string): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(config),
        ClockModule,
        TypeOrmModule.forRoot({
          ...dataSourceOptions(databaseUrl, config.DATABASE_POOL_SIZE),
          // The service must start (and answer health with 503) while the database is away.
          retryAttempts: 0,
          manualInitialization: false,
        }),
        RateLimitModule.forRoot(config),
        AuthModule,
        HealthModule,
        // Metrics before Workloads: /v1/workloads/metrics must be routed before /v1/workloads/:workload_id.
        MetricsModule,
        WorkloadsModule,
        CapacityModule,
      ],
      providers: [
        // Guards run in this order: authenticate and resolve scope, then count against the credential
        // (the client address was already counted by middleware, before authentication).
        { provide: APP_GUARD, useExisting: CredentialGuard },
        { provide: APP_GUARD, useClass: CredentialRateLimitGuard },
        { provide: APP_INTERCEPTOR, useClass: EnvelopeInterceptor },
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
        { provide: APP_PIPE, useClass: ContractValidationPipe },
      ],
    };
  }
}
