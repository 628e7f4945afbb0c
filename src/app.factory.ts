import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import type { AppConfig } from './common/config/app-config';
import type { DatabaseConnectOptions } from './database/database-connector';
import { methodPolicy } from './common/http/method-policy.middleware';
import { setupOpenApi } from './common/http/openapi';
import { createRootLogger, nestLogger, requestLogging } from './common/logging/request-logging';

/** Builds the HTTP application; shared by `gpucap serve`, the e2e tests and the benchmark. */
export async function createApp(
  config: AppConfig,
  databaseUrl: string,
  connect?: DatabaseConnectOptions,
): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot(config, databaseUrl, connect),
    {
      bufferLogs: true,
      // Read-only API (GET and HEAD): no request body is ever read, so no parser runs per request.
      bodyParser: false,
    },
  );
  const rootLogger = createRootLogger(config.LOG_LEVEL);
  app.useLogger(nestLogger(rootLogger));
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', true);
  // Logged first, so the answers methodPolicy gives itself (OPTIONS, 405) are logged too.
  app.use(requestLogging(rootLogger));
  app.use(methodPolicy);
  app.setGlobalPrefix('v1');
  setupOpenApi(app);
  await app.init();
  return app;
}
