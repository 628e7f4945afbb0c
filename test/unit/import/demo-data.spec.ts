import { createHash } from 'node:crypto';
import { currentQuarter, generateDemoRecords } from '../../../src/demo/demo-data';
import type { ImportRecord } from '../../../src/import/import-sections';
import { validateRecord } from '../../../src/import/record-validator';
import { ReferenceTracker } from '../../../src/import/reference-tracker';

const NOW = new Date('2026-11-22T03:00:00Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

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

  it('is live at its now: the newest workloads up to it, pending ones minutes old, a day of samples per running one', () => {
    const now = new Date('2026-11-22T03:07:00Z');
    const { records } = digest({ workloads: 3000, seed: 7, now });
    const workloads = records.flatMap((record) => (record.section === 'workloads' ? [record.row] : []));
    const submitted = (workload: (typeof workloads)[number]) => new Date(workload.submitted_at).getTime();
    // Twelve arrive evenly over the last two hours, the newest in the last ten minutes.
    const live = workloads.filter((workload) => submitted(workload) > now.getTime() - 2 * HOUR);
    expect(live).toHaveLength(12);
    expect(now.getTime() - Math.max(...workloads.map(submitted))).toBeLessThanOrEqual(10 * MINUTE);
    expect(Math.max(...workloads.map(submitted))).toBeLessThanOrEqual(now.getTime());
    const pending = workloads.filter((workload) => workload.status === 'pending');
    expect(pending.length).toBeGreaterThanOrEqual(3);
    for (const workload of pending) expect(now.getTime() - submitted(workload)).toBeLessThanOrEqual(4 * HOUR);

    const running = workloads.filter((workload) => workload.status === 'running');
    expect(running.length).toBeGreaterThan(0);
    const samples = new Map<string, number[]>();
    for (const record of records)
      if (record.section === 'metric_samples')
        samples.set(record.row.workload_id, [
          ...(samples.get(record.row.workload_id) ?? []),
          new Date(record.row.timestamp).getTime(),
        ]);
    for (const workload of running) {
      const started = new Date(workload.started_at!).getTime();
      const times = samples.get(workload.workload_id) ?? [];
      // Every 30 s from the later of its start and 24 h ago, up to now.
      const from = Math.max(Math.ceil(started / 30_000) * 30_000, now.getTime() - 24 * HOUR + 30_000);
      expect({ id: workload.workload_id, first: times[0], count: times.length }).toEqual({
        id: workload.workload_id,
        first: from,
        count: (now.getTime() - from) / 30_000 + 1,
      });
    }
  });

  it("sets the budget quarter at the organization's own midnights (America/New_York)", () => {
    const { records } = digest({ workloads: 10, seed: 1, now: new Date('2026-11-22T03:07:00Z') });
    expect(records.find((record) => record.section === 'organizations')?.row).toMatchObject({
      timezone: 'America/New_York',
      budget_period_start: new Date('2026-10-01T04:00:00Z'),
      budget_period_end: new Date('2027-01-01T05:00:00Z'),
    });
    // Still September 30 in New York: the third quarter, from EDT midnight to EDT midnight.
    expect(currentQuarter(new Date('2026-10-01T03:30:00Z'))).toEqual({
      start: new Date('2026-07-01T04:00:00Z'),
      end: new Date('2026-10-01T04:00:00Z'),
    });
    expect(currentQuarter(new Date('2026-02-10T12:00:00Z'))).toEqual({
      start: new Date('2026-01-01T05:00:00Z'),
      end: new Date('2026-04-01T04:00:00Z'),
    });
  });
});
