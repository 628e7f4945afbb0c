import type { ImportRecord } from '../../../src/import/import-sections';
import { QueryFn, ReferenceTracker } from '../../../src/import/reference-tracker';

const ORG = 'org-a';

function workload(location: number, workloadId: string, initiativeId = 'vision'): ImportRecord {
  return {
    section: 'workloads',
    location,
    row: { organization_id: ORG, workload_id: workloadId, initiative_id: initiativeId },
  } as ImportRecord;
}

function sample(location: number, workloadId: string): ImportRecord {
  return {
    section: 'metric_samples',
    location,
    row: { organization_id: ORG, workload_id: workloadId },
  } as ImportRecord;
}

function initiative(location: number, initiativeId: string): ImportRecord {
  return {
    section: 'initiatives',
    location,
    row: { organization_id: ORG, initiative_id: initiativeId, name: initiativeId },
  };
}

/** A database holding the organization and the given workloads; records the ids it was asked about. */
function database(workloads: string[] = []) {
  const asked: string[][] = [];
  const query = (async (sql: string, params: unknown[]) => {
    const ids = (params[0] as string[]) ?? [];
    if (sql.includes('FROM workloads')) asked.push(ids);
    if (sql.includes('FROM organizations')) return ids.map((id) => ({ organization_id: id, id }));
    if (sql.includes('FROM workloads')) {
      return ids.filter((id) => workloads.includes(id)).map((id) => ({ organization_id: ORG, id }));
    }
    return [];
  }) as QueryFn;
  return { query, asked };
}

describe('ReferenceTracker', () => {
  it('resolves references made before and after the declaration, without asking the database', async () => {
    const tracker = new ReferenceTracker();
    tracker.track(initiative(0, 'vision'));
    tracker.track(sample(0, 'wl-1'));
    tracker.track(workload(0, 'wl-1'));
    tracker.track(sample(1, 'wl-1'));
    const { query, asked } = database();
    expect(await tracker.check(query)).toEqual([]);
    expect(asked).toEqual([]);
  });

  it('reports every record naming a missing workload, and asks the database only about it', async () => {
    const tracker = new ReferenceTracker();
    tracker.track(initiative(0, 'vision'));
    tracker.track(workload(0, 'wl-1'));
    for (const [location, id] of [
      [4, 'wl-9'],
      [1, 'wl-1'],
      [2, 'wl-9'],
      [3, 'wl-in-db'],
      [7, 'wl-9'],
    ] as const) {
      tracker.track(sample(location, id));
    }
    const { query, asked } = database(['wl-in-db']);
    const message = `workload 'wl-9' does not exist in organization '${ORG}' (neither in the file nor in the database)`;
    expect(await tracker.check(query)).toEqual([
      { section: 'metric_samples', location: 2, message },
      { section: 'metric_samples', location: 4, message },
      { section: 'metric_samples', location: 7, message },
    ]);
    expect(asked).toEqual([['wl-9', 'wl-in-db']]);
  });

  it('keeps the first 20 records naming one missing identifier', async () => {
    const tracker = new ReferenceTracker();
    for (let location = 0; location < 25; location += 1)
      tracker.track(workload(location, `wl-${location}`, 'gone'));
    const issues = await tracker.check(database().query);
    expect(issues.map((issue) => issue.location)).toEqual([...Array(20).keys()]);
    expect(issues[0]).toEqual({
      section: 'workloads',
      location: 0,
      message: `initiative 'gone' does not exist in organization '${ORG}' (neither in the file nor in the database)`,
    });
  });

  it('reports a repeated identifier with the first occurrence', () => {
    const tracker = new ReferenceTracker();
    expect(tracker.track(workload(3, 'wl-1'))).toBeNull();
    expect(tracker.track(workload(8, 'wl-1'))).toEqual({
      message: `repeats the workload 'wl-1' of organization '${ORG}'`,
      seeAlso: 3,
    });
  });
});
