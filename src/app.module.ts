import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AlertsModule } from './alerts/alerts.module';
import { CapacityModule } from './capacity/capacity.module';
import { CostsModule } from './costs/costs.module';
import { AuthModule } from './common/auth/auth.module';
import { CredentialGuard } from './common/auth/credential.guard';
import { AppConfig } from './core/config/app-config';
import { ClockModule } from './common/clock';
import { AppConfigModule } from './core/config/config.module';
import { ApiExceptionFilter } from './common/http/api-exception.filter';
import { ContractValidationPipe } from './common/http/contract-validation.pipe';
import { EnvelopeInterceptor } from './common/http/envelope.interceptor';
import { ResponseCacheInterceptor } from './server/response-cache/response-cache.interceptor';
import { ResponseCacheModule } from './server/response-cache/response-cache.module';
import { ReadRoutingInterceptor } from './server/read-routing/read-routing.interceptor';
import { ReadRoutingModule } from './server/read-routing/read-routing.module';
import { ReadReplicasModule } from './database/read-replicas';
import { CredentialRateLimitGuard } from './server/rate-limit/credential-rate-limit.guard';
import { RateLimitModule } from './server/rate-limit/rate-limit.module';
import { dataSourceOptions } from './database/data-source-options';
import { DatabaseConnectOptions, DatabaseConnector } from './database/database-connector';
import { DatabaseReadyGuard } from './server/database-ready.guard';
import { DatabaseStallWatchModule } from './database/database-stall-watch';
import { AggregateReadGateModule } from './common/http/aggregate-read/aggregate-read.module';
import { HealthModule } from './health/health.module';
import { MetricsModule } from './metrics/metrics.module';
import { RecommendationsModule } from './recommendations/recommendations.module';
import { WorkloadsModule } from './workloads/workloads.module';
import { DataSource } from 'typeorm';

@Module({})
export class AppModule {
  /**
   * The database URL is resolved before the module is built (it may be the embedded database's).
   * The service starts whether or not the database answers (health and every route say 503 until it
   * does), and `connect.prepare` (the migrations, for `serve`) runs before each attempt to connect.
   */
  static forRoot(
    config: AppConfig,
    databaseUrl: string,
    connect: DatabaseConnectOptions = {},
  ): DynamicModule {
    const connector = new DatabaseConnector(connect);
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(config),
        ClockModule,
        TypeOrmModule.forRootAsync({
          useFactory: () => ({
            ...dataSourceOptions(databaseUrl, {
              poolSize: config.DATABASE_POOL_SIZE,
              statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
              clientSideTimeout: true,
              noJit: true,
            }),
            manualInitialization: true,
          }),
          dataSourceFactory: (options) => connector.connect(new DataSource(options!)),
        }),
        DatabaseStallWatchModule,
        ReadReplicasModule,
        ReadRoutingModule,
        AggregateReadGateModule,
        RateLimitModule.forRoot(config),
        ResponseCacheModule,
        AuthModule,
        HealthModule,
        // Metrics before Workloads: /v1/workloads/metrics must be routed before /v1/workloads/:workload_id.
        MetricsModule,
        WorkloadsModule,
        CapacityModule,
        CostsModule,
        RecommendationsModule,
        AlertsModule,
      ],
      providers: [
        { provide: DatabaseConnector, useValue: connector },
        // Guards run in this order: database reached once, authenticate and resolve scope, then count
        // against the credential (the client address was already counted by middleware, before
        // authentication).
        { provide: APP_GUARD, useClass: DatabaseReadyGuard },
        { provide: APP_GUARD, useExisting: CredentialGuard },
        { provide: APP_GUARD, useClass: CredentialRateLimitGuard },
        // Routing outside the cache: the cache keys on the version read on the server routed to.
        { provide: APP_INTERCEPTOR, useExisting: ReadRoutingInterceptor },
        // The cache outside the envelope: it keeps enveloped answers and gives each its own request id.
        { provide: APP_INTERCEPTOR, useExisting: ResponseCacheInterceptor },
        { provide: APP_INTERCEPTOR, useClass: EnvelopeInterceptor },
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
        { provide: APP_PIPE, useClass: ContractValidationPipe },
      ],
    };
  }
}
