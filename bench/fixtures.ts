import { Client } from 'pg';
import type { AuthScope } from '../src/common/auth/auth-scope';

export const ORGANIZATION_ID = 'org-demo';

/** The demo organization's ORG_ADMIN, for benchmarks that build the service's statements themselves. */
export const ADMIN_SCOPE: AuthScope = {
  organizationId: ORGANIZATION_ID,
  role: 'ORG_ADMIN',
  initiativeIds: 'all',
  credentialKey: 'token:bench',
  subject: 'bench@example.com',
};

/** Parameters for the request mixes, drawn from the benchmark database itself. */
export interface Fixtures {
  initiatives: { id: string; workloads: number }[];
  memberInitiative: string;
  submitters: string[];
  pools: string[];
  /** Random workload ids of the organization, and of the member's initiative. */
  workloadIds: { admin: string[]; member: string[] };
  /** Random workloads that have metric samples. */
  sampledIds: { admin: string[]; member: string[] };
  /** The longest-running workload that has samples (a ~30-day job on the full dataset). */
  longestJob: { id: string; days: number } | null;
}

const POOL_SIZE = 1000;

export async function loadFixtures(url: string): Promise<Fixtures> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const initiatives = await initiativeCounts(client);
    if (initiatives.length === 0)
      throw new Error(`no initiatives in ${ORGANIZATION_ID}: is the dataset empty?`);
    // The member belongs to the busiest initiative: the harder case for a scoped query.
    const memberInitiative = initiatives[0].id;
    return {
      initiatives,
      memberInitiative,
      submitters: await submitters(client),
      pools: await column(
        client,
        'SELECT pool_id FROM capacity_pools WHERE organization_id = $1 ORDER BY pool_id',
        [ORGANIZATION_ID],
      ),
      workloadIds: {
        admin: await randomWorkloads(client, null),
        member: await randomWorkloads(client, memberInitiative),
      },
      sampledIds: {
        admin: await sampledWorkloads(client, null),
        member: await sampledWorkloads(client, memberInitiative),
      },
      longestJob: await longestSampledJob(client),
    };
  } finally {
    await client.end();
  }
}

async function column(client: Client, sql: string, values: unknown[]): Promise<string[]> {
  const { rows } = await client.query<Record<string, string>>(sql, values);
  return rows.map((row) => Object.values(row)[0]);
}

async function initiativeCounts(client: Client): Promise<{ id: string; workloads: number }[]> {
  const { rows } = await client.query<{ id: string; workloads: number }>(
    `SELECT i.initiative_id AS id, count(w.workload_id)::int AS workloads
       FROM initiatives i LEFT JOIN workloads w USING (organization_id, initiative_id)
      WHERE i.organization_id = $1
      GROUP BY i.initiative_id ORDER BY workloads DESC, i.initiative_id`,
    [ORGANIZATION_ID],
  );
  return rows;
}

async function submitters(client: Client): Promise<string[]> {
  const recent = await column(
    client,
    `SELECT submitted_by FROM workloads WHERE organization_id = $1 ORDER BY submitted_at DESC LIMIT 5000`,
    [ORGANIZATION_ID],
  );
  return [...new Set(recent)].slice(0, 50);
}

/** A uniform sample over the whole history (not just recent rows), so detail reads hit cold pages too. */
async function randomWorkloads(client: Client, initiativeId: string | null): Promise<string[]> {
  return column(
    client,
    `SELECT workload_id FROM workloads
      WHERE organization_id = $1 AND ($2::text IS NULL OR initiative_id = $2)
      ORDER BY random() LIMIT ${POOL_SIZE}`,
    [ORGANIZATION_ID, initiativeId],
  );
}

async function sampledWorkloads(client: Client, initiativeId: string | null): Promise<string[]> {
  return column(
    client,
    `SELECT w.workload_id FROM (
        SELECT workload_id FROM workloads
         WHERE organization_id = $1 AND ($2::text IS NULL OR initiative_id = $2) AND started_at IS NOT NULL
         ORDER BY random() LIMIT ${POOL_SIZE * 3}) w
      WHERE EXISTS (SELECT 1 FROM metric_aggregates a WHERE a.organization_id = $1 AND a.workload_id = w.workload_id AND a.sample_count > 0)
      LIMIT ${POOL_SIZE}`,
    [ORGANIZATION_ID, initiativeId],
  );
}

async function longestSampledJob(client: Client): Promise<{ id: string; days: number } | null> {
  const { rows } = await client.query<{ id: string; days: number }>(
    `SELECT w.workload_id AS id,
            extract(epoch FROM coalesce(w.completed_at, now()) - w.started_at)::float8 / 86400 AS days
       FROM (SELECT * FROM workloads WHERE organization_id = $1 AND started_at IS NOT NULL
              ORDER BY coalesce(completed_at, now()) - started_at DESC LIMIT 20) w
      WHERE EXISTS (SELECT 1 FROM metric_aggregates a WHERE a.organization_id = $1 AND a.workload_id = w.workload_id AND a.sample_count > 0)
      ORDER BY days DESC LIMIT 1`,
    [ORGANIZATION_ID],
  );
  return rows[0] ?? null;
}
