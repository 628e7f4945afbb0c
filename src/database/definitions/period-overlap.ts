/**
 * Whether two periods [effective_from, effective_to) of one `key` in one organization of `table` overlap,
 * among the organizations a statement wrote (its new_rows): the check behind every table of periods.
 */
export function overlappingPeriodsSql(table: string, key: string): string {
  return `EXISTS (
        SELECT 1 FROM ${table} a JOIN ${table} b
          ON a.organization_id = b.organization_id AND a.${key} = b.${key}
         AND a.effective_from < b.effective_from
         AND (a.effective_to IS NULL OR a.effective_to > b.effective_from)
        WHERE a.organization_id IN (SELECT organization_id FROM new_rows)
      )`;
}
