/*
 * Amounts a workloads row carries for the rollups to sum (its cost, its energy): settled by a
 * function of the row while it is not running, and settled again by UPDATEs when what they depend on
 * changes. Shared by the rollups that settle such columns.
 */

/** Whether a workloads row (`row`: NEW, o, …) is running: its amounts accrue where they are read. */
export const runningRowSql = (row: string): string =>
  `(${row}.started_at IS NOT NULL AND ${row}.completed_at IS NULL)`;

/**
 * An UPDATE that settles `columns` of the workloads `o` (not running) that `conditions` pick, with
 * `from` joined, to what `settle` (a set-returning call over `o`, with those columns) gives, writing
 * only the rows whose amounts change: their own triggers carry each change on.
 */
export function settleColumnsSql(
  columns: readonly string[],
  settle: string,
  from: string,
  conditions: string[],
): string {
  const stored = columns.map((column) => `o.${column}`).join(', ');
  const settled = columns.map((column) => `n.${column}`).join(', ');
  return `UPDATE workloads w SET (${columns.join(', ')}) = (${settled})
        FROM ${from}, workloads o
        CROSS JOIN LATERAL ${settle} n
        WHERE ${conditions.join('\n          AND ')}
          AND NOT ${runningRowSql('o')} AND (${stored}) IS DISTINCT FROM (${settled})
          AND w.organization_id = o.organization_id AND w.workload_id = o.workload_id`;
}

/**
 * settleColumnsSql as plpgsql statements that run the UPDATE only when a workload it could settle
 * exists. A statement trigger fires for no rows too, and a plan cached for an empty transition table
 * (a nested loop over two of them) is then reused for large ones: an UPDATE that finds nothing to
 * settle is skipped instead of firing every workloads trigger with empty tables.
 */
export function settleColumnsIfAnySql(
  columns: readonly string[],
  settle: string,
  from: string,
  conditions: string[],
): string {
  return `PERFORM 1 FROM ${from}, workloads o
        WHERE ${conditions.join('\n          AND ')} AND NOT ${runningRowSql('o')} LIMIT 1;
      IF FOUND THEN
        ${settleColumnsSql(columns, settle, from, conditions)};
      END IF`;
}
