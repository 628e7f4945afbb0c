/** The version of an organization no writer has touched yet: below every version a write gives. */
export const UNWRITTEN_VERSION = '0';

/**
 * The current data version of each organization in `organizationIds`, one primary-key lookup each;
 * named, so each connection parses and plans it once (bench/prepared-statements.ts). An
 * organization without a row has UNWRITTEN_VERSION.
 */
export function dataVersionsQuery(organizationIds: string[]): {
  name: string;
  text: string;
  values: unknown[];
} {
  return {
    name: 'gpucap_data_versions',
    text: `SELECT organization_id, version::text AS version
           FROM organization_data_versions WHERE organization_id = ANY ($1::text[])`,
    values: [organizationIds],
  };
}

export interface DataVersionRow {
  organization_id: string;
  version: string;
}
