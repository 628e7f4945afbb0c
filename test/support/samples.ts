import type { DataSource } from 'typeorm';
import { sealSamples } from '../../src/import/sample-seal';

const DAY_MS = 86_400_000;

/**
 * Every stored reading as a row, from both stores (the sealed days' blocks and the open rows), with
 * the columns of metric_samples: what recomputations from raw readings read.
 */
export const ALL_SAMPLES_SQL = `(
  SELECT d.organization_id, d.workload_id, u.sampled_at, u.gpu_utilization, u.memory_utilization,
         u.temperature, u.power_usage
  FROM metric_sample_days d
  CROSS JOIN LATERAL gpucap_unpack_samples(d.day_start, d.step_us, d.gpu_utilization,
    d.memory_utilization, d.temperature, d.power_usage) u
  UNION ALL
  SELECT organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage
  FROM metric_samples
)`;

/** Where a test's readings are read from: as written, partly sealed, or all in day blocks. */
export type SampleStore = 'rows' | 'rows and day blocks' | 'day blocks';
export const SAMPLE_STORES: SampleStore[] = ['rows', 'rows and day blocks', 'day blocks'];

/**
 * Seals the organizations' readings as the writers would on a later day: before today's start
 * ('rows and day blocks') or all of them ('day blocks'). The factories write rows of any day, so the
 * watermark first goes back to "nothing sealed".
 */
export async function sealForStore(
  dataSource: DataSource,
  organizationIds: string[],
  store: SampleStore,
): Promise<number> {
  if (store === 'rows') return 0;
  await unsealOrganizations(dataSource, organizationIds);
  const before = new Date((Math.floor(Date.now() / DAY_MS) + (store === 'day blocks' ? 1 : 0)) * DAY_MS);
  const { readings } = await sealSamples(dataSource, { organizationIds, before });
  if (readings === 0) throw new Error(`nothing was sealed for readings in ${store}`);
  return readings;
}

/**
 * Nothing of the organizations sealed, as for one stored before the day blocks existed: the
 * factories may then write rows of any time, and a seal moves them.
 */
export async function unsealOrganizations(dataSource: DataSource, organizationIds: string[]): Promise<void> {
  await dataSource.query(
    `UPDATE sample_seal_watermarks SET sealed_before = '-infinity' WHERE organization_id = ANY ($1::text[])`,
    [organizationIds],
  );
}
