import type { DataSource } from 'typeorm';
import { BulkLoader } from '../import/bulk-loader';
import { ImportRejectedError } from '../import/import-errors';
import { ImportRecord } from '../import/import-sections';
import { validateRecord } from '../import/record-validator';
import { ReferenceTracker } from '../import/reference-tracker';
import { LOCK_ORGANIZATIONS_SQL } from '../import/writer-lock';
import type { SyncRecord } from './sync-records';
import type { SourceName } from './sync-report';

export interface WriteResult {
  records: number;
  written: number;
  /** Rows inserted or changed, by section: what the report tells apart. */
  writtenBySection: Record<
    Exclude<SyncRecord['section'], 'prices' | 'carbon_intensity' | 'instance_types'>,
    number
  >;
}

/** Which watermark a write moves: a source of a cluster (`''` for the config's top-level sources). */
export interface WatermarkKey {
  cluster: string;
  source: SourceName;
}

const WATERMARK_SQL = `
  INSERT INTO sync_watermarks AS w (organization_id, cluster_id, source, read_until, updated_at)
  VALUES ($1, $2, $3, $4, now())
  ON CONFLICT (organization_id, cluster_id, source)
  DO UPDATE SET read_until = excluded.read_until, updated_at = now()
  WHERE w.read_until IS DISTINCT FROM excluded.read_until`;

/**
 * Writes one source's records exactly as `gpucap import` would (the same record validation, reference
 * checks and bulk loader: the organization's writer lock, set-based upserts that leave identical
 * rows alone, one transaction) and moves the source's watermark in that same transaction, so a
 * watermark is never visible ahead of the data it covers.
 */
export async function writeSyncRecords(
  dataSource: DataSource,
  organizationId: string,
  watermark: WatermarkKey | null,
  records: AsyncIterable<SyncRecord> | Iterable<SyncRecord>,
  readUntil: Date,
): Promise<WriteResult> {
  const loader = await BulkLoader.open(dataSource);
  const tracker = new ReferenceTracker();
  const issues: string[] = [];
  const locations: Record<string, number> = {};
  try {
    for await (const { section, value } of records) {
      const location = (locations[section] = (locations[section] ?? -1) + 1);
      const result = validateRecord(section, value);
      if (result.issues) {
        issues.push(...result.issues.map((issue) => `${describeRecord(section, value)}: ${issue}`));
        if (issues.length >= 20) break;
        continue;
      }
      const record = { section, location, row: result.row } as ImportRecord;
      const duplicate = tracker.track(record);
      if (duplicate) issues.push(`${describeRecord(section, value)}: ${duplicate.message}`);
      else if (issues.length === 0) await loader.add(record);
    }
    if (issues.length === 0) {
      await loader.lockOrganizations();
      for (const issue of await tracker.check(loader.query)) {
        issues.push(`${issue.section}: ${issue.message}`);
      }
    }
    if (issues.length > 0) throw new SyncRejectedError(issues);
    await loader.query(LOCK_ORGANIZATIONS_SQL, [[organizationId]]);
    if (watermark) {
      await loader.query(WATERMARK_SQL, [organizationId, watermark.cluster, watermark.source, readUntil]);
    }
    const summary = await loader.finish();
    const sections = ['organizations', 'initiatives', 'workloads', 'metric_samples'] as const;
    return {
      records: sections.reduce((sum, name) => sum + summary.records[name], 0),
      written: sections.reduce((sum, name) => sum + summary.written[name], 0),
      writtenBySection: Object.fromEntries(
        sections.map((name) => [name, summary.written[name]]),
      ) as WriteResult['writtenBySection'],
    };
  } catch (error) {
    await loader.abort();
    if (error instanceof ImportRejectedError) throw new SyncRejectedError(error.lines());
    throw error;
  }
}

/** What a source produced broke the import rules: nothing of that source was written. */
export class SyncRejectedError extends Error {
  constructor(readonly issues: string[]) {
    super(
      `rejected, nothing written: ${issues.slice(0, 3).join('; ')}${issues.length > 3 ? ` (+${issues.length - 3} more)` : ''}`,
    );
  }
}

function describeRecord(section: SyncRecord['section'], value: Record<string, unknown>): string {
  if (section === 'organizations') return `organization '${String(value.organization_id)}'`;
  if (section === 'initiatives') return `initiative '${String(value.initiative_id)}'`;
  if (section === 'workloads') return `workload '${String(value.workload_id)}'`;
  if (section === 'instance_types') return `instance type '${String(value.instance_type)}'`;
  if (section === 'carbon_intensity') {
    return `carbon intensity of cluster '${String(value.cluster_id)}' from ${String(value.effective_from)}`;
  }
  return `sample of '${String(value.workload_id)}' at ${String(value.timestamp)}`;
}
