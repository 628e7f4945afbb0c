import { type AuthScope, scopedInitiativeIds } from '../common/auth/auth-scope';
import {
  initiativeScopeSql,
  organizationStatement,
  type ScopedStatement,
  scopedStatement,
} from '../common/database/scoped-statement';
import { StatementParameters } from '../common/database/statement-parameters';

/**
 * Running workloads started before the window whose samples inside it average at most the idle
 * threshold: one pass over the running workloads (partial index) and their samples of the window
 * from both sample stores (the window's lower bound is exclusive).
 */
export function idleWorkloadsQuery(
  scope: AuthScope,
  windowStart: Date,
  now: Date,
  maxUtilization: number,
): ScopedStatement {
  const params = new StatementParameters(scope);
  const from = params.add(windowStart);
  const to = params.add(now);
  const threshold = params.add(maxUtilization);
  return scopedStatement(
    scope,
    `SELECT w.initiative_id, w.workload_id, w.submitted_by, w.gpu_count, w.instance_type,
            avg(s.gpu_utilization)::float8 AS average_utilization, count(*)::int AS sample_count
     FROM workloads w
     CROSS JOIN LATERAL gpucap_workload_samples(w.organization_id, w.workload_id, ${from}, ${to}) s
     WHERE w.organization_id = ${params.organization} AND w.status = 'running' AND w.started_at <= ${from} AND s.sampled_at > ${from}
     GROUP BY w.initiative_id, w.workload_id, w.submitted_by, w.gpu_count, w.instance_type
     HAVING avg(s.gpu_utilization) <= ${threshold}
     ORDER BY w.workload_id COLLATE "C"`,
    params.values,
  );
}

/** Whether the organization exists: checked once at start, so a typo in the config says so. */
export function organizationExistsQuery(scope: AuthScope): ScopedStatement {
  const params = new StatementParameters(scope);
  return organizationStatement(
    scope,
    `SELECT 1 FROM organizations WHERE organization_id = ${params.organization}`,
    params.values,
  );
}

/** Sync sources whose last successful run is older than `since`. */
export function staleSyncSourcesQuery(scope: AuthScope, since: Date): ScopedStatement {
  const params = new StatementParameters(scope);
  return organizationStatement(
    scope,
    `SELECT cluster_id, source, updated_at FROM sync_watermarks
     WHERE organization_id = ${params.organization} AND updated_at < ${params.add(since)}
     ORDER BY cluster_id COLLATE "C", source COLLATE "C"`,
    params.values,
  );
}

/**
 * Records what holds now in one statement: alerts firing are inserted (started now) or kept (their
 * start unchanged, annotations refreshed; a row only changes when something in it does), and those
 * that were firing and no longer hold get `ends_at`. Several `gpucap alerts` processes may run it at
 * once: the primary key makes their inserts agree.
 */
export function recordAlertsStatement(
  scope: AuthScope,
  firing: {
    fingerprint: string;
    alertname: string;
    initiativeId: string | null;
    labels: object;
    annotations: object;
  }[],
  now: Date,
): ScopedStatement {
  const params = new StatementParameters(scope);
  const organization = params.organization;
  const columns = [
    `${params.add(firing.map((alert) => alert.fingerprint))}::text[]`,
    `${params.add(firing.map((alert) => alert.alertname))}::text[]`,
    `${params.add(firing.map((alert) => alert.initiativeId))}::text[]`,
    `${params.add(firing.map((alert) => JSON.stringify(alert.labels)))}::jsonb[]`,
    `${params.add(firing.map((alert) => JSON.stringify(alert.annotations)))}::jsonb[]`,
  ];
  const at = params.add(now);
  return scopedStatement(
    scope,
    `WITH firing AS (
       SELECT * FROM unnest(${columns.join(', ')})
         AS f(fingerprint, alertname, initiative_id, labels, annotations)
     ), recorded AS (
       INSERT INTO alert_states AS a
         (organization_id, fingerprint, alertname, initiative_id, labels, annotations, starts_at)
       SELECT ${organization}, fingerprint, alertname, initiative_id, labels, annotations, ${at} FROM firing
       ORDER BY fingerprint
       ON CONFLICT (organization_id, fingerprint) DO UPDATE
         SET annotations = excluded.annotations,
             initiative_id = excluded.initiative_id,
             starts_at = CASE WHEN a.ends_at IS NULL THEN a.starts_at ELSE excluded.starts_at END,
             ends_at = NULL
         WHERE a.ends_at IS NOT NULL
            OR a.annotations IS DISTINCT FROM excluded.annotations
            OR a.initiative_id IS DISTINCT FROM excluded.initiative_id
       RETURNING 1
     ), ended AS (
       UPDATE alert_states a SET ends_at = ${at}
       WHERE a.organization_id = ${organization} AND a.ends_at IS NULL
         AND a.fingerprint NOT IN (SELECT fingerprint FROM firing)
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM recorded)::int AS recorded, (SELECT count(*) FROM ended)::int AS ended`,
    params.values,
  );
}

export interface AlertStateRow {
  fingerprint: string;
  alertname: string;
  initiative_id: string | null;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  starts_at: Date;
  ends_at: Date | null;
}

/** Every recorded alert of the organization: firing ones and resolutions not yet delivered. */
export function alertStatesQuery(scope: AuthScope): ScopedStatement {
  const params = new StatementParameters(scope);
  return scopedStatement(
    scope,
    `SELECT fingerprint, alertname, initiative_id, labels, annotations, starts_at, ends_at
     FROM alert_states WHERE organization_id = ${params.organization}
     ORDER BY fingerprint`,
    params.values,
  );
}

/** Resolutions Alertmanager has taken; one that fired again since (ends_at cleared) stays. */
export function forgetDeliveredStatement(scope: AuthScope, fingerprints: string[]): ScopedStatement {
  const params = new StatementParameters(scope);
  return scopedStatement(
    scope,
    `DELETE FROM alert_states
     WHERE organization_id = ${params.organization} AND ends_at IS NOT NULL AND fingerprint = ANY (${params.add(fingerprints)}::text[])`,
    params.values,
  );
}

/**
 * What is firing in the caller's scope: a caller limited to some initiatives sees the alerts of
 * those teams and their workloads, never a pool's or a sync source's (organization-wide figures).
 */
export function firingAlertsQuery(scope: AuthScope): ScopedStatement {
  const params = new StatementParameters(scope);
  const initiatives = params.add(scopedInitiativeIds(scope));
  return scopedStatement(
    scope,
    `SELECT alertname, labels, annotations, starts_at
     FROM alert_states
     WHERE organization_id = ${params.organization} AND ends_at IS NULL AND ${initiativeScopeSql('initiative_id', initiatives)}
     ORDER BY starts_at DESC, fingerprint`,
    params.values,
  );
}
