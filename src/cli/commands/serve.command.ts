import { Logger, type INestApplication } from '@nestjs/common';
import type { Server } from 'node:http';
import pino from 'pino';
import { DataSource } from 'typeorm';
import { createApp } from '../../app.factory';
import type { AppConfig } from '../../core/config/app-config';
import type { DatabaseConnectOptions } from '../../database/database-connector';
import { migrate, openDatabaseTarget, openDataSource } from '../../database/database-target';
import { defaultEmbeddedDirectory, EmbeddedDatabase } from '../../database/embedded-database';
import { projectRoot } from '../../core/project-root';
import { ensureUpcomingSamplePartitions } from '../../database/sample-partitions';
import { DEMO_ORGANIZATION_ID, writeDemoData } from '../../demo/demo-data';
import { Organization } from '../../database/entities/organization.entity';
import { CliContext, Command } from '../cli-context';
import { helpText, parseFor } from '../command-line';
import { packageVersion } from '../../core/version';
import { HttpDrain } from '../http-drain';
import { tokenService } from './tokens.command';

const FIRST_START_DEMO_WORKLOADS = 20_000;
const DEMO_SEED = 42;
const PARTITION_MAINTENANCE_INTERVAL_MS = 6 * 3_600_000;
/** Requests still running after this are cut; below docker-compose's stop_grace_period (30 s). */
const SHUTDOWN_DEADLINE_MS = 20_000;

export const serveCommand: Command = async (args, context) => {
  const { config } = context;
  const { values, spec } = parseFor('serve', args);
  if (values.help) {
    context.stdout.write(`${helpText(spec)}\n`);
    return 0;
  }
  const noMigrate = values['no-migrate'] === true;
  const notice = noticeWriter(context.stderr, config);
  const target = await openDatabaseTarget(config);
  const running: { app?: INestApplication; drain?: HttpDrain } = {};
  const shutdown = async (signal: string) => {
    notice(`${signal} received: finishing in-flight requests, then stopping`);
    await running.drain?.drain(SHUTDOWN_DEADLINE_MS);
    await running.app?.close();
    await target.release();
  };
  const onSignal = (signal: string) =>
    void shutdown(signal).then(
      () => process.exit(0),
      (error: Error) => {
        context.stderr.write(`gpucap serve: stopping failed: ${error.message}\n`);
        process.exit(1);
      },
    );
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));

  const connect: DatabaseConnectOptions = {};
  let demoTokens: DemoTokens | undefined;
  if (target.embedded) {
    await migrate(target.url);
    demoTokens = await prepareDemo(target.url, context);
  } else if (config.MIGRATE_ON_START && !noMigrate) {
    // Also when the database is away at boot: the migrations run once it answers, before serving.
    connect.prepare = () => migrate(target.url);
  }
  const logs = startupLogDestination();
  const app = await createApp(config, target.url, { connect, logDestination: logs.destination });
  running.app = app;
  const server = app.getHttpServer() as Server;
  running.drain = new HttpDrain(server);
  keepSamplePartitionsAhead(app.get(DataSource), context);
  await app.listen(config.PORT, config.HOST);
  const dataFolder = target.embedded ? embeddedDataFolder(config) : undefined;
  noticeWriter(context.stdout, config)(greeting(config, listeningPort(server), demoTokens, dataFolder));
  logs.started();
  return new Promise<number>(() => undefined);
};

/**
 * Log lines go out synchronously until the greeting is printed, so the greeting comes after every
 * start-up line instead of among them; then asynchronously, as pino does by default, for requests.
 */
function startupLogDestination() {
  let target: pino.DestinationStream = pino.destination({ dest: 1, sync: true });
  return {
    destination: { write: (line: string) => target.write(line) },
    started: () => {
      target = pino.destination({ dest: 1, sync: false });
    },
  };
}

/** Where the embedded cluster keeps its data (beside the checkout, or its copy under /var/tmp as root). */
function embeddedDataFolder(config: AppConfig): string {
  return new EmbeddedDatabase({
    directory: config.EMBEDDED_PG_DIR ?? defaultEmbeddedDirectory(projectRoot()),
    port: config.EMBEDDED_PG_PORT,
  }).clusterDirectory;
}

/** Plain text for a person at a terminal; in production, a line in the structured log instead. */
function noticeWriter(stream: NodeJS.WritableStream, config: AppConfig): (message: string) => void {
  if (config.NODE_ENV === 'production') {
    const logger = new Logger('gpucap');
    // The first line that says something, without the greeting's frame.
    return (message) =>
      logger.log(
        message
          .split('\n')
          .map((line) => line.replace(/^# ?/, ''))
          .find((line) => line.trim() !== '' && !line.startsWith('===')) ?? message,
      );
  }
  return (message) => stream.write(`${message}\n`);
}

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

/** The port actually bound: with PORT=0 the system picks one, and the greeting must name that one. */
function listeningPort(server: Server): number {
  const address = server.address();
  return typeof address === 'object' && address !== null ? address.port : 0;
}

const RULE = `# ${'='.repeat(78)}`;

/**
 * The last thing start-up prints, framed by two rules. Every line is either a shell comment or a
 * command, so any of them (or the whole block) can be pasted into a shell as it is.
 */
function greeting(
  config: AppConfig,
  port: number,
  demo: DemoTokens | undefined,
  dataFolder: string | undefined,
): string {
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST;
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const lines = [
    '',
    RULE,
    `# gpucap ${packageVersion()} is listening on ${base} (Ctrl-C stops it)`,
    `#   Dashboard page: ${base}/   (paste a token and the organization id)`,
    `#   API: ${base}/v1/   OpenAPI: ${base}/v1/openapi.json   Browsable: ${base}/docs`,
    dataFolder
      ? `#   Data: embedded PostgreSQL on 127.0.0.1:${config.EMBEDDED_PG_PORT}, kept in ${dataFolder}`
      : '#   Data: the PostgreSQL of DATABASE_URL',
  ];
  if (demo) {
    const header =
      '-H "Authorization: Bearer $GPUCAP_TOKEN" -H "X-Organization-Id: ' + DEMO_ORGANIZATION_ID + '"';
    lines.push(
      '#',
      `# Demo organization '${DEMO_ORGANIZATION_ID}'. Tokens for this run (the previous run's are revoked):`,
      `export GPUCAP_TOKEN=${demo.admin}   # ORG_ADMIN: the whole organization`,
      `export GPUCAP_MEMBER_TOKEN=${demo.member}   # MEMBER of ${demo.memberInitiative}`,
      '#',
      `# Open ${base}/ and paste a token with organization ${DEMO_ORGANIZATION_ID}, or try:`,
      `curl -s "${base}/v1/workloads?limit=3" ${header}`,
      `curl -s "${base}/v1/workloads/stats?group_by=initiative_id" ${header}`,
      `curl -s "${base}/v1/capacity" ${header}`,
    );
  }
  lines.push(RULE);
  return lines.join('\n');
}
