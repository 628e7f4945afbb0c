import { validateRecord } from '../../../src/import/record-validator';

const workload = {
  workload_id: 'wl-1',
  organization_id: 'org-a',
  initiative_id: 'vision',
  name: 'resnet-sweep-3',
  status: 'completed',
  submitted_by: 'alice@acme.example',
  instance_type: 'p5.48xlarge',
  gpu_count: 8,
  is_managed: true,
  cluster_id: 'eks-use1',
  namespace: 'vision',
  submitted_at: '2026-11-20T08:00:00Z',
  started_at: '2026-11-20T08:02:00Z',
  completed_at: '2026-11-20T10:02:00Z',
  exit_code: 0,
};

function issuesOf(section: Parameters<typeof validateRecord>[0], value: unknown): string[] {
  return validateRecord(section, value).issues ?? [];
}

describe('validateRecord', () => {
  describe('GPU shares', () => {
    const shareOf = (value: object) => {
      const result = validateRecord('workloads', { ...workload, ...value });
      return result.row ? result.row.gpu_share : result.issues;
    };

    it('derives the share from a MIG profile or replicas, and keeps an explicit one', () => {
      expect(shareOf({ gpu_count: 7, gpu_sharing: { mode: 'mig', profile: '1g.10gb' } })).toBe(1);
      expect(shareOf({ gpu_count: 2, gpu_sharing: { mode: 'mig', profile: '2g.12gb' } })).toBe(1);
      expect(shareOf({ gpu_count: 1, gpu_sharing: { mode: 'time-slicing', replicas: 4 } })).toBe(0.25);
      expect(shareOf({ gpu_count: 1, gpu_sharing: { mode: 'mig', profile: 'x.2' }, gpu_share: 0.2 })).toBe(
        0.2,
      );
      expect(shareOf({})).toBe(8);
    });

    it('takes a share of 0 only without GPUs, and refuses what cannot be a share', () => {
      expect(shareOf({ gpu_count: 0, gpu_share: 0 })).toBe(0);
      expect(shareOf({ gpu_share: 0 })).toEqual(['gpu_share must be at least 1/5040 of a GPU']);
      expect(shareOf({ gpu_count: 0, gpu_share: 1 })).toEqual([
        'gpu_share must be absent or 0 when gpu_count is 0',
      ]);
      expect(shareOf({ gpu_share: 9 })).toEqual([
        'gpu_share must not exceed gpu_count (one GPU per device at most)',
      ]);
      expect(shareOf({ gpu_count: 1, gpu_sharing: { mode: 'mig', profile: '9g.1tb' } })).toEqual([
        "gpu_sharing.profile '9g.1tb' is not a MIG profile gpucap knows: give gpu_share, the physical GPUs the workload holds",
      ]);
      expect(shareOf({ gpu_sharing: { mode: 'mps', replicas: 0 } })).toEqual([
        'gpu_sharing replicas must be an integer from 1 to 1000',
      ]);
      expect(shareOf({ gpu_sharing: { mode: 'mig' } })).toHaveLength(1);
    });
  });

  it('accepts a valid workload and converts timestamps', () => {
    const result = validateRecord('workloads', workload);
    expect(result.issues).toBeUndefined();
    expect(result.row?.started_at).toEqual(new Date('2026-11-20T08:02:00Z'));
  });

  it.each([
    [
      { status: 'done' },
      'status must be one of pending, running, completed, failed, cancelled (unknown status "done")',
    ],
    [{ started_at: '2026-11-20T07:00:00Z' }, 'started_at must not be before submitted_at'],
    [{ completed_at: '2026-11-20T08:01:00Z' }, 'completed_at must not be before started_at'],
    [{ status: 'running' }, 'completed_at must be null for a running workload'],
    [{ status: 'pending' }, 'started_at must be null for a pending workload'],
    [{ exit_code: null }, 'exit_code is required for a completed workload'],
    [{ gpu_count: 1.5 }, 'gpu_count must be an integer from 0 to 100000'],
    [{ submitted_at: '2026-11-20T08:00:00' }, 'submitted_at must be an ISO 8601 timestamp with an offset'],
    [{ submitted_at: '2026-02-30T08:00:00Z' }, 'submitted_at must be an ISO 8601 timestamp with an offset'],
    [{ workload_id: 'bad id' }, 'workload_id must be an identifier'],
    [{ is_managed: 'yes' }, 'is_managed must be true or false'],
    [{ duration_seconds: 7200 }, 'duration_seconds is derived by the service and cannot be imported'],
    [{ gpu_hours_used: 16 }, 'gpu_hours_used is derived by the service and cannot be imported'],
    [{ colour: 'red' }, "unknown field 'colour'"],
    [{ name: undefined }, 'name is required'],
  ])('rejects %j', (change, expected) => {
    expect(issuesOf('workloads', { ...workload, ...change }).join('\n')).toContain(expected);
  });

  it('accepts a workload cancelled while pending', () => {
    const cancelled = { ...workload, status: 'cancelled', started_at: null, exit_code: null };
    expect(issuesOf('workloads', cancelled)).toEqual([]);
  });

  it('checks samples, organizations and members', () => {
    const sample = {
      organization_id: 'org-a',
      workload_id: 'wl-1',
      timestamp: '2026-11-20T08:03:00+01:00',
      gpu_utilization: 100.5,
      memory_utilization: -1,
      temperature: 70,
      power_usage: -3,
    };
    expect(issuesOf('metric_samples', sample)).toEqual([
      'gpu_utilization must be a number from 0 to 100',
      'memory_utilization must be a number from 0 to 100',
      'power_usage must be a number greater than or equal to 0',
    ]);
    const organization = {
      organization_id: 'org-a',
      name: 'Acme',
      timezone: 'Mars/Olympus',
      budget_period_start: '2026-10-01T00:00:00Z',
      budget_period_end: '2026-10-01T00:00:00Z',
    };
    expect(issuesOf('organizations', organization)).toEqual([
      'timezone must be an IANA time zone such as Europe/Berlin (Area/Location or UTC, no abbreviation)',
    ]);
    expect(issuesOf('organizations', { ...organization, timezone: 'Asia/Tokyo' })).toEqual([
      'budget_period_start must be before budget_period_end',
    ]);
    expect(issuesOf('members', { organization_id: 'org-a', subject: 'a@b', role: 'OWNER' })).toEqual([
      'role must be one of ORG_ADMIN, TEAM_LEAD, MEMBER',
    ]);
    expect(
      issuesOf('pools', { organization_id: 'org-a', pool_id: 'p', name: 'P', instance_types: ['a', 'a'] }),
    ).toEqual([
      'instance_types must be an array of distinct identifiers (1 to 128 characters from A-Z a-z 0-9 . _ : -)',
    ]);
  });

  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])(
    'refuses a field named %s like any other unknown field',
    (field) => {
      const record = JSON.parse(JSON.stringify(workload).replace('{', `{"${field}": 1, `)) as object;
      expect(Object.keys(record)).toContain(field);
      expect(issuesOf('workloads', record)).toEqual([`unknown field '${field}'`]);
    },
  );

  describe('time zones', () => {
    const organization = {
      organization_id: 'org-a',
      name: 'Acme',
      budget_period_start: '2026-10-01T00:00:00Z',
      budget_period_end: '2026-12-01T00:00:00Z',
    };
    const zoneIssues = (timezone: string) => issuesOf('organizations', { ...organization, timezone });

    it.each([
      'UTC',
      'Europe/Berlin',
      'America/Argentina/Buenos_Aires',
      'America/Port-au-Prince',
      'Asia/Kolkata',
      'Etc/GMT+5',
    ])('accepts %s', (timezone) => {
      expect(zoneIssues(timezone)).toEqual([]);
    });

    it('accepts every canonical zone ICU lists', () => {
      const refused = Intl.supportedValuesOf('timeZone').filter((zone) => zoneIssues(zone).length > 0);
      expect(refused).toEqual([]);
    });

    it.each([
      // PostgreSQL no longer knows it (dropped from tzdata in 2020), ICU still does.
      'US/Pacific-New',
      // Abbreviations: ICU and PostgreSQL read BST and IST as different zones.
      'BST',
      'IST',
      'EST',
      'US/Pacific',
      'GMT+5',
      '+05:00',
      'europe/berlin',
      'Mars/Olympus',
      'Europe/',
    ])('refuses %s', (timezone) => {
      expect(zoneIssues(timezone)).toEqual([
        'timezone must be an IANA time zone such as Europe/Berlin (Area/Location or UTC, no abbreviation)',
      ]);
    });
  });
});
