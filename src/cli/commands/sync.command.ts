import { createRootLogger } from '../../server/request-logging';
import { parseDurationMs } from '../../core/duration';
import { loadSyncConfig, SyncConfigError } from '../../ingest/sync-config';
import { reportLine, reportWarnings } from '../../ingest/sync-report';
import { syncEvery, syncOnce } from '../../ingest/sync-runner';
import { Command, UsageError } from '../cli-context';
import { readConfigCommand, stopSignal } from '../config-command';
import { withDatabase } from '../with-database';

/** Not parseDurationFlag: its one-minute floor suits expiries and retention, and a sync may run every second. */
function parseInterval(text: string): number {
  const ms = parseDurationMs(text);
  if (ms === null) throw new UsageError(`--every must be a duration such as 60s, 5m or 1h (got '${text}')`);
  return ms;
}

/**
 * `gpucap sync`: reads Kubernetes, Prometheus (DCGM exporter) and Slurm as the config says and writes
 * through the import's loader. `--once` (the default): one line per source, exit 1 when a source
 * failed or refused records. `--every`: JSON log lines, a failed source retried with back-off, until
 * SIGINT/SIGTERM (the run in progress finishes first).
 */
export const syncCommand: Command = async (args, context) => {
  const command = readConfigCommand('sync', args, context, {
    load: loadSyncConfig,
    error: SyncConfigError,
    interval: parseInterval,
  });
  if (command === null) return 0;
  const { config, intervalMs } = command;
  return withDatabase(context, async (dataSource) => {
    const run = { dataSource, config, inCluster: context.config.KUBERNETES_SERVICE_HOST !== undefined };
    if (intervalMs === null) {
      const reports = await syncOnce(run);
      for (const report of reports) {
        context.stdout.write(`${reportLine(report)}\n`);
        for (const warning of reportWarnings(report)) context.stderr.write(`${warning}\n`);
      }
      const troubled = reports.some((report) => !report.ok || Object.keys(report.refused).length > 0);
      return troubled ? 1 : 0;
    }
    const logger = createRootLogger(context.config.LOG_LEVEL);
    const stopped = stopSignal();
    logger.info({ organization_id: config.organizationId, every_ms: intervalMs }, 'sync started');
    await syncEvery(run, {
      intervalMs,
      stopped,
      onReport: (report, nextAttemptMs) => {
        const entry = {
          organization_id: config.organizationId,
          ...report,
          next_attempt_in_s: nextAttemptMs / 1000,
        };
        if (report.ok) logger.info(entry, reportLine(report));
        else logger.warn(entry, reportLine(report));
        for (const warning of reportWarnings(report)) {
          logger.warn({ organization_id: config.organizationId, source: report.source }, warning);
        }
      },
    });
    logger.info({ organization_id: config.organizationId }, 'sync stopped');
    // The logger writes asynchronously and the CLI exits on return: its last lines go out first.
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    return 0;
  });
};
