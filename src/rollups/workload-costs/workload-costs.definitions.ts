import { overlapMicrosecondsSql } from '../../core/price-overlap';
import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';
import { runningRowSql, settleColumnsSql } from '../../database/definitions/settled-columns';

/** The columns a workload's settled amounts are stored in, in the order gpucap_run_costs returns them. */
export const SETTLED_COST_COLUMNS = [
  'cost_unit_us',
  'priced_cost_unit_us',
  'priced_whole_unit_us',
  'whole_cost_unit_us',
] as const;

/**
 * An UPDATE that settles the amounts of the workloads `o` (not running) that `conditions` pick, with
 * `from` joined, writing only the rows whose amounts change.
 */
export function settleWorkloadsSql(from: string, conditions: string[]): string {
  return settleColumnsSql(
    SETTLED_COST_COLUMNS,
    'gpucap_run_costs(o.organization_id, o.instance_type, o.gpu_share_units, o.started_at, o.completed_at)',
    from,
    conditions,
  );
}

/** The workloads a transaction's price changes re-costed (a temporary table, gone at commit). */
export const RECOSTED_TABLE = 'gpucap_recosted_workloads';

/** The changes of one price statement, by event: the transition tables it has. */
const PRICE_EVENTS = [
  { event: 'INSERT', referencing: 'NEW TABLE AS new_rows', changed: 'SELECT * FROM new_rows' },
  {
    event: 'UPDATE',
    referencing: 'OLD TABLE AS old_rows NEW TABLE AS new_rows',
    changed: 'SELECT * FROM new_rows UNION ALL SELECT * FROM old_rows',
  },
  { event: 'DELETE', referencing: 'OLD TABLE AS old_rows', changed: 'SELECT * FROM old_rows' },
];

/**
 * Workload costs: the money of each workload that is not running, settled from its instance type's
 * price periods when it is written and again when those periods change (docs/architecture.md, "Cost").
 * The amounts are share units × microseconds × price, exact numerics:
 * - cost_unit_us: the cost of the exact run, null when the type has no price or part of the run
 *   falls outside every period (0 for one that never started, on a priced type);
 * - priced_cost_unit_us: the same over the parts that have a price (what totals add up);
 * - priced_whole_unit_us: share units × priced microseconds of the run's whole seconds (the GPU-hours'
 *   basis: what "unpriced GPU-hours" are the rest of);
 * - whole_cost_unit_us: the cost of the whole seconds, which the idle cost is a share of.
 * The period rollups and status totals sum them through their own workloads triggers.
 */
export const workloadCostDefinitions: Definition[] = [
  // plpgsql, not sql: a SQL function called per row is planned on every call; this plan is cached.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_run_costs(organization text, instance text, units bigint,
        run_from timestamptz, run_to timestamptz,
        OUT cost_unit_us numeric, OUT priced_cost_unit_us numeric, OUT priced_whole_unit_us numeric, OUT whole_cost_unit_us numeric)
      LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
    DECLARE
      run_us double precision := round(date_part('epoch', run_to - run_from) * 1e6);
      whole_to timestamptz := run_from + floor(greatest(0, date_part('epoch', run_to - run_from))) * interval '1 second';
    BEGIN
      SELECT CASE WHEN count(*) > 0 AND coalesce(sum(p.us), 0) >= coalesce(run_us, 0)
                  THEN units * coalesce(sum(p.price_per_gpu_hour * p.us), 0) END,
             units * coalesce(sum(p.price_per_gpu_hour * p.us), 0),
             units * coalesce(sum(p.whole_us), 0),
             units * coalesce(sum(p.price_per_gpu_hour * p.whole_us), 0)
        INTO cost_unit_us, priced_cost_unit_us, priced_whole_unit_us, whole_cost_unit_us
      FROM (SELECT price.price_per_gpu_hour,
                   ${overlapMicrosecondsSql('price', 'run_from', 'run_to')} AS us,
                   ${overlapMicrosecondsSql('price', 'run_from', 'whole_to')} AS whole_us
            FROM gpu_prices price WHERE price.organization_id = organization AND price.instance_type = instance) AS p;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_costs_settle() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      IF ${runningRowSql('NEW')} THEN
        NEW.cost_unit_us := NULL; NEW.priced_cost_unit_us := NULL; NEW.priced_whole_unit_us := NULL; NEW.whole_cost_unit_us := NULL;
      ELSE
        SELECT c.cost_unit_us, c.priced_cost_unit_us, c.priced_whole_unit_us, c.whole_cost_unit_us
          INTO NEW.cost_unit_us, NEW.priced_cost_unit_us, NEW.priced_whole_unit_us, NEW.whole_cost_unit_us
        FROM gpucap_run_costs(NEW.organization_id, NEW.instance_type, coalesce(NEW.share_units, NEW.gpu_count::bigint * 5040),
                                   NEW.started_at, NEW.completed_at) c;
      END IF;
      RETURN NEW;
    END
    $$`),
  ...PRICE_EVENTS.map(({ event, changed }) =>
    defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_price_recost_${event.toLowerCase()}() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      -- What a price import reports: the workloads whose amounts changed, each once however many
      -- of the transaction's statements re-cost it.
      IF to_regclass('pg_temp.${RECOSTED_TABLE}') IS NULL THEN
        CREATE TEMPORARY TABLE ${RECOSTED_TABLE} (organization_id text, workload_id text,
          PRIMARY KEY (organization_id, workload_id)) ON COMMIT DROP;
      END IF;
      -- Per instance type, the span its changed periods cover: only runs overlapping it can change,
      -- and never-started ones, whose 0 or null depends on whether the type has a price at all.
      WITH changed AS (
        SELECT organization_id, instance_type, min(effective_from) AS from_at, max(coalesce(effective_to, 'infinity')) AS to_at
        FROM (${changed}) AS c GROUP BY 1, 2
      ),
      settled AS (
        ${settleWorkloadsSql('changed c', [
          'o.organization_id = c.organization_id AND o.instance_type = c.instance_type',
          '(o.started_at IS NULL OR (o.started_at < c.to_at AND o.completed_at > c.from_at))',
        ])}
        RETURNING w.organization_id, w.workload_id
      )
      INSERT INTO ${RECOSTED_TABLE} SELECT organization_id, workload_id FROM settled ON CONFLICT DO NOTHING;
      RETURN NULL;
    END
    $$`),
  ),
  defineTrigger(
    `CREATE OR REPLACE TRIGGER workloads_costs_insert BEFORE INSERT ON workloads FOR EACH ROW
       WHEN (NOT ${runningRowSql('NEW')}) EXECUTE FUNCTION gpucap_workload_costs_settle()`,
  ),
  defineTrigger(
    `CREATE OR REPLACE TRIGGER workloads_costs_update BEFORE UPDATE ON workloads FOR EACH ROW
       WHEN (OLD.started_at IS DISTINCT FROM NEW.started_at OR OLD.completed_at IS DISTINCT FROM NEW.completed_at
          OR OLD.instance_type IS DISTINCT FROM NEW.instance_type OR OLD.share_units IS DISTINCT FROM NEW.share_units
          OR OLD.gpu_count IS DISTINCT FROM NEW.gpu_count OR OLD.organization_id IS DISTINCT FROM NEW.organization_id)
       EXECUTE FUNCTION gpucap_workload_costs_settle()`,
  ),
  ...PRICE_EVENTS.map(({ event, referencing }) =>
    defineTrigger(
      `CREATE OR REPLACE TRIGGER gpu_prices_recost_${event.toLowerCase()} AFTER ${event} ON gpu_prices REFERENCING ${referencing} FOR EACH STATEMENT EXECUTE FUNCTION gpucap_price_recost_${event.toLowerCase()}()`,
    ),
  ),
];
