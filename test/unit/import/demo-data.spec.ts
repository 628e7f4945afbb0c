import { createHash } from 'node:crypto';
import { generateDemoRecords } from '../../../src/demo/demo-data';
import type { ImportRecord } from '../../../src/import/import-sections';
import { validateRecord } from '../../../src/import/record-validator';
import { ReferenceTracker } from '../../../src/import/reference-tracker';

const NOW = new Date('2026-11-22T03:00:00Z');

function toJson(record: ImportRecord): unknown {
  return JSON.parse(JSON.stringify(record.row));
}

function digest(options: Parameters<typeof generateDemoRecords>[0]): {
  hash: string;
  records: ImportRecord[];
} {
  const hash = createHash('sha256');
  const records = [...generateDemoRecords(options)];
  for (const record of records) hash.update(`${record.section}${JSON.stringify(record.row)}\n`);
  return { hash: hash.digest('hex'), records };
}

describe('demo data generator', () => {
  it('is deterministic for a seed and differs for another seed', () => {
    const first = digest({ workloads: 500, seed: 7, now: NOW });
    expect(digest({ workloads: 500, seed: 7, now: NOW }).hash).toBe(first.hash);
    expect(digest({ workloads: 500, seed: 8, now: NOW }).hash).not.toBe(first.hash);
  });

  it('produces records that pass the import validation and reference checks', async () => {
    const { records } = digest({ workloads: 2000, seed: 3, now: NOW, samples: 20_000 });
    const tracker = new ReferenceTracker();
    for (const record of records) {
      const result = validateRecord(record.section, toJson(record));
      expect({ location: `${record.section}[${record.location}]`, issues: result.issues }).toEqual({
        location: `${record.section}[${record.location}]`,
        issues: undefined,
      });
      expect(tracker.track(record)).toBeNull();
    }
    expect(await tracker.check(async () => [])).toEqual([]);
  });

  it('shows every status, an unowned instance type and samples near the target', () => {
    const { records } = digest({ workloads: 5000, seed: 42, now: NOW, samples: 50_000 });
    const workloads = records.flatMap((record) => (record.section === 'workloads' ? [record.row] : []));
    const statuses = new Set(workloads.map((workload) => workload.status));
    expect([...statuses].sort()).toEqual(['cancelled', 'completed', 'failed', 'pending', 'running']);
    expect(workloads.some((w) => w.status === 'cancelled' && w.started_at === null)).toBe(true);
    expect(workloads.some((w) => w.instance_type === 'g4dn.xlarge')).toBe(true);
    const samples = records.filter((record) => record.section === 'metric_samples').length;
    expect(samples).toBeGreaterThanOrEqual(45_000);
    expect(samples).toBeLessThanOrEqual(60_000);
  });
});
