import { type AuthScope, scopedInitiativeIds } from '../common/auth/auth-scope';
import {
  initiativeScopeSql,
  organizationStatement,
  type ScopedStatement,
  scopedStatement,
} from '../common/database/scoped-statement';

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
  return scopedStatement(
    scope,
    `SELECT w.initiative_id, w.workload_id, w.submitted_by, w.gpu_count, w.instance_type,
            avg(s.gpu_utilization)::float8 AS average_utilization, count(*)::int AS sample_count
     FROM workloads w
     CROSS JOIN LATERAL gpucap_workload_samples(w.organization_id, w.workload_id, $2, $3) s
     WHERE w.organization_id = $1 AND w.status = 'running' AND w.started_at <= $2 AND s.sampled_at > $2
     GROUP BY w.initiative_id, w.workload_id, w.submitted_by, w.gpu_count, w.instance_type
     HAVING avg(s.gpu_utilization) <= $4
     ORDER BY w.workload_id COLLATE "C"`,
    [scope.organizationId, windowStart, now, maxUtilization],
  );
}

/** Whether the organization exists: checked once at start, so a typo in the config says so. */
export function organizationExistsQuery(scope: AuthScope): ScopedStatement {
  return organizationStatement(scope, 'SELECT 1 FROM organizations WHERE organization_id = $1', [
    scope.organizationId,
  ]);
}

/** Sync sources whose last successful run is older than `since`. */
export function staleSyncSourcesQuery(scope: AuthScope, since: Date): ScopedStatement {
  return organizationStatement(
    scope,
    `SELECT cluster_id, source, updated_at FROM sync_watermarks
     WHERE organization_id = $1 AND updated_at < $2
     ORDER BY cluster_id COLLATE "C", source COLLATE "C"`,
    [scope.organizationId, since],
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
  return scopedStatement(
    scope,
    `WITH firing AS (
       SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::jsonb[], $6::jsonb[])
         AS f(fingerprint, alertname, initiative_id, labels, annotations)
     ), recorded AS (
       INSERT INTO alert_states AS a
         (organization_id, fingerprint, alertname, initiative_id, labels, annotations, starts_at)
       SELECT $1, fingerprint, alertname, initiative_id, labels, annotations, $7 FROM firing
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
       UPDATE alert_states a SET ends_at = $7
       WHERE a.organization_id = $1 AND a.ends_at IS NULL
         AND a.fingerprint NOT IN (SELECT fingerprint FROM firing)
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM recorded)::int AS recorded, (SELECT count(*) FROM ended)::int AS ended`,
    [
      scope.organizationId,
      firing.map((alert) => alert.fingerprint),
      firing.map((alert) => alert.alertname),
      firing.map((alert) => alert.initiativeId),
      firing.map((alert) => JSON.stringify(alert.labels)),
      firing.map((alert) => JSON.stringify(alert.annotations)),
      now,
    ],
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
  return scopedStatement(
    scope,
    `SELECT fingerprint, alertname, initiative_id, labels, annotations, starts_at, ends_at
     FROM alert_states WHERE organization_id = $1
     ORDER BY fingerprint`,
    [scope.organizationId],
  );
}

/** Resolutions Alertmanager has taken; one that fired again since (ends_at cleared) stays. */
export function forgetDeliveredStatement(scope: AuthScope, fingerprints: string[]): ScopedStatement {
  return scopedStatement(
    scope,
    `DELETE FROM alert_states
     WHERE organization_id = $1 AND ends_at IS NOT NULL AND fingerprint = ANY ($2::text[])`,
    [scope.organizationId, fingerprints],
  );
}

/**
 * What is firing in the caller's scope: a caller limited to some initiatives sees the alerts of
 * those teams and their workloads, never a pool's or a sync source's (organization-wide figures).
 */
export function firingAlertsQuery(scope: AuthScope): ScopedStatement {
  return scopedStatement(
    scope,
    `SELECT alertname, labels, annotations, starts_at
     FROM alert_states
     WHERE organization_id = $1 AND ends_at IS NULL AND ${initiativeScopeSql('initiative_id', '$2')}
     ORDER BY starts_at DESC, fingerprint`,
    [scope.organizationId, scopedInitiativeIds(scope)],
  );
}
