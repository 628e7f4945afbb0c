/** The version of an organization no writer has touched yet: below every version a write gives. */
export const UNWRITTEN_VERSION = '0';

/**
 * The current data version of each organization in `organizationIds`, one primary-key lookup each
 * (null for an organization without a row: UNWRITTEN_VERSION), with what the server's data includes:
 * on the primary every write committed before the statement began (`read_at`), on a streaming replica
 * what it had replayed (`replayed`, a WAL position; null on the primary). Named, so each connection
 * parses and plans it once (bench/prepared-statements.ts).
 */
export function dataVersionsQuery(organizationIds: string[]): {
  name: string;
  text: string;
  values: unknown[];
} {
  return {
    name: 'gpucap_data_versions',
    text: `SELECT asked.organization_id, versions.version::text AS version,
                  statement_timestamp() AS read_at, pg_last_wal_replay_lsn()::text AS replayed
           FROM unnest($1::text[]) AS asked (organization_id)
           LEFT JOIN organization_data_versions AS versions USING (organization_id)`,
    values: [organizationIds],
  };
}

export interface DataVersionRow {
  organization_id: string;
  version: string | null;
  read_at: Date;
  replayed: string | null;
}
