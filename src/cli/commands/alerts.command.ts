import {
  assertOrganizationExists,
  failureLine,
  runAlertCycle,
  runAlertCycles,
  UnknownOrganizationError,
} from '../../alerts/alert-cycle';
import { AlertsConfigError, loadAlertsConfig } from '../../alerts/alerts-config';
import { ScopedDatabase } from '../../common/database/scoped-database';
import { createRootLogger } from '../../server/request-logging';
import { DatabaseStallWatch } from '../../database/database-stall-watch';
import type { Command } from '../cli-context';
import { readConfigCommand, stopSignal } from '../config-command';
import { parseDurationFlag } from '../duration';
import { withDatabase } from '../with-database';

/**
 * `gpucap alerts`: evaluates the config's rules against the database and hands what fires (and what
 * stopped firing) to Alertmanager. `--once` (the default): one line, exit 1 when the cycle failed.
 * `--every`: JSON log lines, a failed cycle retried with back-off, until SIGINT/SIGTERM (the cycle in
 * progress finishes first).
 */
export const alertsCommand: Command = async (args, context) => {
  const command = readConfigCommand('alerts', args, context, {
    load: loadAlertsConfig,
    error: AlertsConfigError,
    interval: (text) => parseDurationFlag(text, '--every'),
  });
  if (command === null) return 0;
  const { file, config, intervalMs } = command;
  return withDatabase(context, async (dataSource) => {
    const stallWatch = new DatabaseStallWatch(dataSource);
    const database = new ScopedDatabase(dataSource, stallWatch);
    try {
      try {
        await assertOrganizationExists(database, config);
      } catch (error) {
        if (!(error instanceof UnknownOrganizationError)) throw error;
        context.stderr.write(`alerts ${file}: ${error.message}\n`);
        return 1;
      }
      if (intervalMs === null) {
        try {
          const report = await runAlertCycle(database, config, new Date(), null);
          context.stdout.write(
            `alerts ${report.organization_id}: ${report.firing} firing, ${report.resolved} resolved, sent to Alertmanager\n`,
          );
          return 0;
        } catch (error) {
          context.stderr.write(`alerts ${config.organizationId}: ${failureLine(error)}\n`);
          return 1;
        }
      }
      const logger = createRootLogger(context.config.LOG_LEVEL);
      const stopped = stopSignal();
      logger.info({ organization_id: config.organizationId, every_ms: intervalMs }, 'alerts started');
      await runAlertCycles(database, config, () => new Date(), {
        intervalMs,
        stopped,
        onCycle: (outcome, nextAttemptMs) => {
          const next = { next_attempt_in_s: nextAttemptMs / 1000 };
          if ('report' in outcome) {
            logger.info({ ...outcome.report, ...next }, 'alerts sent to Alertmanager');
          } else {
            logger.warn(
              { organization_id: config.organizationId, ...next },
              `alerts cycle failed: ${failureLine(outcome.error)}`,
            );
          }
        },
      });
      logger.info({ organization_id: config.organizationId }, 'alerts stopped');
      return 0;
    } finally {
      await stallWatch.onModuleDestroy();
    }
  });
};
