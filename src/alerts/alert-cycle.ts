import { retryDelayMs, sleepUnlessStopped } from '../common/retry';
import type { AuthScope } from '../common/auth/auth-scope';
import { CapacityService } from '../capacity/capacity.service';
import { CapacityQueryDto } from '../capacity/dto/capacity-query.dto';
import type { ScopedDatabase } from '../common/database/scoped-database';
import { adviseWorkload, readWorkloadEvidence } from '../recommendations/rightsizing';
import {
  type AdvisedWorkload,
  evaluateAlerts,
  fingerprintOf,
  type IdleWorkloadRow,
  type SyncSourceRow,
} from './alert-rules';
import { AlertmanagerUnavailableError, postAlerts, type PostableAlert } from './alertmanager-client';
import type { AlertsConfig } from './alerts-config';
import {
  type AlertStateRow,
  alertStatesQuery,
  forgetDeliveredStatement,
  idleWorkloadsQuery,
  organizationExistsQuery,
  recordAlertsStatement,
  staleSyncSourcesQuery,
} from './alerts.queries';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

export interface CycleReport {
  organization_id: string;
  firing: number;
  resolved: number;
}

/**
 * The whole organization, as an ORG_ADMIN sees it: pools' and teams' figures must be those
 * GET /v1/capacity gives an administrator, not a partial scope's.
 */
function evaluatorScope(organizationId: string): AuthScope {
  return {
    organizationId,
    role: 'ORG_ADMIN',
    initiativeIds: 'all',
    credentialKey: 'alerts',
    subject: 'gpucap-alerts',
  };
}

/** The config names an organization the database does not hold. */
export class UnknownOrganizationError extends Error {}

/** The configured organization, or an error naming it: checked once before the first cycle. */
export async function assertOrganizationExists(
  database: ScopedDatabase,
  config: AlertsConfig,
): Promise<void> {
  const rows = await database.run(organizationExistsQuery(evaluatorScope(config.organizationId)));
  if (rows.length === 0)
    throw new UnknownOrganizationError(`organization '${config.organizationId}' does not exist`);
}

/**
 * One evaluation: the conditions are read from the data (one capacity report, one idle query, the
 * sync sources), what was sent before from alert_states; then everything firing and every
 * resolution not yet delivered goes to Alertmanager in one request. A resolution is forgotten only
 * once Alertmanager took it, so an outage delays it and loses nothing.
 *
 * `resendWithinMs` sets each firing alert's `endsAt` that far ahead, so Alertmanager resolves it on
 * its own only if this process stops re-sending it (under `--once`, Alertmanager's resolve_timeout
 * applies instead).
 */
export async function runAlertCycle(
  database: ScopedDatabase,
  config: AlertsConfig,
  now: Date,
  resendWithinMs: number | null,
): Promise<CycleReport> {
  const scope = evaluatorScope(config.organizationId);
  const { rules } = config;
  const [capacity, idle, advised, staleSources] = await Promise.all([
    new CapacityService(database).report(scope, new CapacityQueryDto(), now),
    rules.idleWorkload
      ? database.run<IdleWorkloadRow>(
          idleWorkloadsQuery(
            scope,
            new Date(now.getTime() - rules.idleWorkload.forMinutes * MINUTE_MS),
            now,
            rules.idleWorkload.maxUtilization,
          ),
        )
      : Promise.resolve([]),
    rules.oversizedWorkload ? advisedRunningWorkloads(database, scope, now) : Promise.resolve([]),
    rules.syncStaleMinutes !== null
      ? database.run<SyncSourceRow>(
          staleSyncSourcesQuery(scope, new Date(now.getTime() - rules.syncStaleMinutes * MINUTE_MS)),
        )
      : Promise.resolve([]),
  ]);
  const alerts = evaluateAlerts({
    organizationId: config.organizationId,
    rules,
    capacity,
    idle,
    advised,
    staleSources,
  });
  await database.run(
    recordAlertsStatement(
      scope,
      alerts.map((alert) => ({
        fingerprint: fingerprintOf(alert.labels),
        alertname: alert.labels.alertname,
        initiativeId: alert.initiativeId,
        labels: alert.labels,
        annotations: alert.annotations,
      })),
      now,
    ),
  );
  const states = await database.run<AlertStateRow>(alertStatesQuery(scope));
  const endsAt = resendWithinMs === null ? undefined : new Date(now.getTime() + resendWithinMs).toISOString();
  const postable = states.map((state): PostableAlert => ({
    labels: state.labels,
    annotations: state.annotations,
    startsAt: state.starts_at.toISOString(),
    ...(state.ends_at ? { endsAt: state.ends_at.toISOString() } : endsAt ? { endsAt } : {}),
    generatorURL: config.dashboardUrl,
  }));
  await postAlerts(config.alertmanager, postable);
  const delivered = states.filter((state) => state.ends_at !== null).map((state) => state.fingerprint);
  if (delivered.length > 0) await database.run(forgetDeliveredStatement(scope, delivered));
  return {
    organization_id: config.organizationId,
    firing: states.length - delivered.length,
    resolved: delivered.length,
  };
}

/** The running workloads the advice would shrink, judged on their last day. */
async function advisedRunningWorkloads(
  database: ScopedDatabase,
  scope: AuthScope,
  now: Date,
): Promise<AdvisedWorkload[]> {
  const from = new Date(now.getTime() - DAY_MS);
  const { catalogue, rows } = await readWorkloadEvidence(database, scope, {
    from,
    to: now,
    now,
    runningOnly: true,
  });
  return rows.flatMap((row) => {
    const outcome = adviseWorkload(row, catalogue.gpusOf(row.instance_type));
    return 'advice' in outcome ? [{ row, advice: outcome.advice }] : [];
  });
}

export interface EveryOptions {
  intervalMs: number;
  stopped: Promise<void>;
  onCycle: (outcome: { report: CycleReport } | { error: Error }, nextAttemptMs: number) => void;
}

/**
 * Runs a cycle every interval until `stopped` (the cycle in progress finishes first). A failed cycle
 * (Alertmanager or the database away) is retried after retryDelayMs, at most the interval: nothing is
 * lost meanwhile, since the next cycle evaluates from the data again.
 */
export async function runAlertCycles(
  database: ScopedDatabase,
  config: AlertsConfig,
  clock: () => Date,
  options: EveryOptions,
): Promise<void> {
  let stop = false;
  void options.stopped.then(() => (stop = true));
  let failures = 0;
  while (!stop) {
    let waitMs: number;
    try {
      // Four intervals of grace: a cycle or two may fail before Alertmanager would resolve on its own.
      const report = await runAlertCycle(database, config, clock(), options.intervalMs * 4);
      failures = 0;
      waitMs = options.intervalMs;
      options.onCycle({ report }, waitMs);
    } catch (error) {
      failures += 1;
      waitMs = Math.min(retryDelayMs(failures), options.intervalMs);
      options.onCycle({ error: error as Error }, waitMs);
    }
    if (stop) break;
    await sleepUnlessStopped(waitMs, options.stopped);
  }
}

/**
 * One line for a failed cycle: Alertmanager's answer as it is; anything else by its code only, since
 * a driver's message may carry an address or a statement.
 */
export function failureLine(error: unknown): string {
  if (error instanceof AlertmanagerUnavailableError) return error.message;
  const code = (error as { code?: unknown }).code;
  return `evaluation failed (${typeof code === 'string' ? code : ((error as Error).name ?? 'error')})`;
}
