import type { INestApplication } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { createApp } from '../../app.factory';
import type { AppConfig } from '../../common/config/app-config';
import { migrate, openDatabaseTarget, openDataSource } from '../../database/database-target';
import { ensureUpcomingSamplePartitions } from '../../database/sample-partitions';
import { DEMO_ORGANIZATION_ID, writeDemoData } from '../../demo/demo-data';
import { Organization } from '../../organizations/entities/organization.entity';
import type { CliContext, Command } from '../cli-context';
import { tokenService } from './tokens.command';

const FIRST_START_DEMO_WORKLOADS = 20_000;
const DEMO_SEED = 42;
const PARTITION_MAINTENANCE_INTERVAL_MS = 6 * 3_600_000;

export const serveCommand: Command = async (_args, context) => {
  const { config } = context;
  const target = await openDatabaseTarget(config);
  const running: { app?: INestApplication } = {};
  const shutdown = async (signal: string) => {
    context.stderr.write(`\n${signal} received: finishing in-flight requests, then stopping\n`);
    await running.app?.close();
    await target.embedded?.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));

  await migrate(target.url);
  const demoTokens = target.embedded ? await prepareDemo(target.url, context) : undefined;
  const app = await createApp(config, target.url);
  running.app = app;
  keepSamplePartitionsAhead(app.get(DataSource), context);
  await app.listen(config.PORT, config.HOST);
  context.stdout.write(greeting(config, demoTokens));
  return new Promise<number>(() => undefined);
};

/** A long-running service keeps next weeks' sample partitions in place, so imports never create one. */
function keepSamplePartitionsAhead(dataSource: DataSource, context: CliContext): void {
  const timer = setInterval(() => {
    ensureUpcomingSamplePartitions(dataSource).catch((error: Error) =>
      context.stderr.write(`could not create upcoming sample partitions: ${error.message}\n`),
    );
  }, PARTITION_MAINTENANCE_INTERVAL_MS);
  timer.unref();
}

interface DemoTokens {
  admin: string;
  member: string;
  memberInitiative: string;
}

/** Fills the embedded database with the demo organization on first start, and mints fresh demo tokens. */
async function prepareDemo(url: string, context: CliContext): Promise<DemoTokens> {
  const dataSource = await openDataSource(url, 4);
  try {
    if (!(await dataSource.getRepository(Organization).existsBy({ organizationId: DEMO_ORGANIZATION_ID }))) {
      context.stderr.write('First start on the embedded database: writing the demo organization...\n');
      await writeDemoData(dataSource, {
        workloads: FIRST_START_DEMO_WORKLOADS,
        seed: DEMO_SEED,
        onProgress: (line) => context.stderr.write(`${line}\n`),
      });
    }
    return await mintDemoTokens(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

/** Each start revokes the previous demo tokens (their secrets were only ever printed) and prints new ones. */
async function mintDemoTokens(dataSource: DataSource): Promise<DemoTokens> {
  const tokens = tokenService(dataSource);
  for (const existing of await tokens.list(DEMO_ORGANIZATION_ID)) {
    if (existing.name.startsWith('demo-')) await tokens.revoke(existing.tokenId);
  }
  const [firstInitiative] = await dataSource.query<{ initiative_id: string }[]>(
    'SELECT initiative_id FROM initiatives WHERE organization_id = $1 ORDER BY initiative_id LIMIT 1',
    [DEMO_ORGANIZATION_ID],
  );
  const memberInitiative = firstInitiative?.initiative_id ?? '';
  const admin = await tokens.create({
    organizationId: DEMO_ORGANIZATION_ID,
    role: 'ORG_ADMIN',
    initiativeIds: [],
    name: 'demo-admin',
    expiresAt: null,
  });
  const member = await tokens.create({
    organizationId: DEMO_ORGANIZATION_ID,
    role: 'MEMBER',
    initiativeIds: memberInitiative ? [memberInitiative] : [],
    name: 'demo-member',
    expiresAt: null,
  });
  return { admin: admin.token, member: member.token, memberInitiative };
}

function greeting(config: AppConfig, demo: DemoTokens | undefined): string {
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST;
  const base = `http://${host}:${config.PORT}`;
  const lines = [`gpucap is listening on ${base}  (OpenAPI: ${base}/v1/openapi.json, UI: ${base}/docs)`];
  if (demo) {
    lines.push(
      '',
      `Demo organization '${DEMO_ORGANIZATION_ID}' on the embedded PostgreSQL. Tokens for this run:`,
      `  ORG_ADMIN: export GPUCAP_TOKEN=${demo.admin}`,
      `  MEMBER of ${demo.memberInitiative}: ${demo.member}`,
      '',
      'Try:',
      `  curl -s ${base}/v1/workloads?limit=3 -H "Authorization: Bearer $GPUCAP_TOKEN" -H "X-Organization-Id: ${DEMO_ORGANIZATION_ID}"`,
      `  curl -s "${base}/v1/workloads/stats?group_by=initiative_id" -H "Authorization: Bearer $GPUCAP_TOKEN" -H "X-Organization-Id: ${DEMO_ORGANIZATION_ID}"`,
      `  curl -s ${base}/v1/capacity -H "Authorization: Bearer $GPUCAP_TOKEN" -H "X-Organization-Id: ${DEMO_ORGANIZATION_ID}"`,
    );
  }
  return `${lines.join('\n')}\n`;
}
