import type { INestApplication } from '@nestjs/common';
import type { Server } from 'node:http';
import { DataSource } from 'typeorm';
import { createApp } from '../../src/app.factory';
import { loadConfig } from '../../src/core/config/app-config';

export const TEST_JWT_SECRET = 'test-only-jwt-secret-not-for-production';

export interface TestApp {
  app: INestApplication;
  server: Server;
  dataSource: DataSource;
  close(): Promise<void>;
}

export function testDatabaseUrl(): string {
  const url = process.env.GPUCAP_TEST_DATABASE_URL;
  if (!url) throw new Error('GPUCAP_TEST_DATABASE_URL is unset: run e2e tests through jest (global setup)');
  return url;
}

/** The real application (real guard, pipes, filter, migrations, PostgreSQL) with test configuration. */
export async function createTestApp(
  env: Record<string, string> = {},
  databaseUrl = testDatabaseUrl(),
): Promise<TestApp> {
  const config = loadConfig({
    JWT_SECRET: TEST_JWT_SECRET,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_MINUTE: '100000',
    RATE_LIMIT_PER_IP_PER_MINUTE: '100000',
    DATABASE_POOL_SIZE: '5',
    ...env,
  });
  const app = await createApp(config, databaseUrl);
  return {
    app,
    server: app.getHttpServer() as Server,
    dataSource: app.get(DataSource),
    close: () => app.close(),
  };
}
