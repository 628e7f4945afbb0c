import { parse as parseQueryString } from 'node:querystring';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import type { DestinationStream, Logger as RootLogger } from 'pino';
import { AppModule } from './app.module';
import type { AppConfig } from './core/config/app-config';
import { hardenHttpServer, hostRequired, keepIdleConnections } from './server/harden-http-server';
import type { DatabaseConnectOptions } from './database/database-connector';
import { MethodPolicy } from './server/method-policy.middleware';
import { setupOpenApi } from './server/openapi';
import { createRootLogger, nestLogger, requestLogging } from './server/request-logging';
import { clientAddressRateLimit } from './server/rate-limit/client-address-rate-limit.middleware';
import { RateLimiter } from './common/rate-limit/rate-limiter';
import { trustedProxyList } from './core/config/trusted-proxies';
import { loggableError } from './common/logging/loggable-error';
import { buildWebPage, serveWebPage } from './web/web-page';
import compression from 'compression';
import express, { type Express, type RequestHandler } from 'express';
import { DataSource } from 'typeorm';
import { ResponseCache } from './server/response-cache/response-cache';
import { ReadReplicas } from './database/read-replicas';
import { AggregateReadGate } from './common/http/aggregate-read/aggregate-read-gate';
import { metricsEndpoint, ServiceMetrics } from './server/observability/service-metrics';

/** Bodies smaller than this gain less from compression than it costs. */
const COMPRESSION_THRESHOLD_BYTES = 1024;

export interface AppOptions {
  /** Where logs go (default stdout); tests read them from here. */
  logDestination?: DestinationStream;
  /** How the service reaches its database at boot (retries while it is away). */
  connect?: DatabaseConnectOptions;
}

/** Builds the HTTP application; shared by `gpucap serve`, the e2e tests and the benchmark. */
export async function createApp(
  config: AppConfig,
  databaseUrl: string,
  options: AppOptions = {},
): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot(config, databaseUrl, options.connect),
    new ExpressAdapter(caseSensitiveExpress()),
    {
      bufferLogs: true,
      // Read-only API (GET and HEAD): no request body is ever read, so no parser runs per request.
      bodyParser: false,
    },
  );
  const rootLogger = createRootLogger(config.LOG_LEVEL, options.logDestination);
  app.useLogger(nestLogger(rootLogger));
  // Nest flushes buffered logs at listen(); an app served without it (tests, bench) would keep them.
  app.flushLogs();
  app.disable('x-powered-by');
  app.set('etag', false);
  // request.ip: X-Forwarded-For is believed only as far back as the proxies the operator trusts.
  app.set('trust proxy', trustedProxyList(config.TRUSTED_PROXIES));
  const methodPolicy = new MethodPolicy();
  hardenHttpServer(app.getHttpServer(), rootLogger, methodPolicy);
  keepIdleConnections(app.getHttpServer(), config.HTTP_KEEP_ALIVE_TIMEOUT_SECONDS);
  // Logged first, so the answers methodPolicy gives itself (OPTIONS, 405) are logged too.
  app.use(requestLogging(rootLogger));
  app.use(hostRequired());
  const metrics = new ServiceMetrics(
    app.get(DataSource),
    app.get(ResponseCache),
    app.get(AggregateReadGate),
    app.get(ReadReplicas),
  );
  app.use(metrics.recordRequests);
  app.use(compressionWhenAccepted());
  app.use(methodPolicy.middleware);
  // Before the rate limiter: scrapes are never limited, and never need an organization.
  const server: Express = app.getHttpAdapter().getInstance();
  server.get('/metrics', metricsEndpoint(metrics, config.METRICS_TOKEN));
  app.use(clientAddressRateLimit(app.get(RateLimiter), config.RATE_LIMIT_PER_IP_PER_MINUTE));
  await mountWebPage(app, rootLogger);
  app.setGlobalPrefix('v1');
  setupOpenApi(app);
  await app.init();
  methodPolicy.readRoutes(server);
  return app;
}

/**
 * Express matches paths case-insensitively by default: `/V1/Capacity` would be served, and
 * `/v1/Health` answered by health yet missed by the middlewares that know health's path (the rate
 * limiter's exemption). The router takes the setting when it is created, which Nest's adapter does
 * in its constructor, so it is set on an instance made here.
 */
function caseSensitiveExpress(): Express {
  const server = express();
  server.set('case sensitive routing', true);
  // Express's own parser is querystring.parse with its default of 1000 keys: a parameter after the
  // thousandth was dropped unseen (a filter silently lost, a bad value not refused). The request line
  // is bounded by the 16 KB header limit, so every key can be read and validated.
  server.set('query parser', (text: string) => parseQueryString(text, '&', '=', { maxKeys: 0 }));
  return server;
}

/**
 * gzip/br for clients that accept an encoding. A request without Accept-Encoding skips the
 * middleware: it would wrap the response's write and end and hook its headers for nothing
 * (a sixth of a cached answer's CPU).
 */
function compressionWhenAccepted(): RequestHandler {
  const compress = compression({ threshold: COMPRESSION_THRESHOLD_BYTES });
  return (request, response, next) =>
    request.headers['accept-encoding'] ? compress(request, response, next) : next();
}

/** The dashboard page at `/`; without its sources (an image built without web/) the API still serves. */
async function mountWebPage(app: NestExpressApplication, logger: RootLogger): Promise<void> {
  try {
    app.use(serveWebPage(await buildWebPage()));
  } catch (error) {
    logger.warn(
      { error: loggableError(error) },
      'the dashboard page could not be built; serving the API only',
    );
  }
}
