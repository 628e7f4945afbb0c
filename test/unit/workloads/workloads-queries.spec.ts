import type { AuthScope } from '../../../src/common/auth/auth-scope';
import {
  listWorkloadsPageQuery,
  splitByUtcDay,
  WorkloadDetailRow,
} from '../../../src/workloads/workloads.queries';
import { toWorkloadDetail } from '../../../src/workloads/workload.responses';

const admin: AuthScope = {
  organizationId: 'org-a',
  role: 'ORG_ADMIN',
  initiativeIds: 'all',
  credentialKey: 'k',
  subject: 's',
};

describe('splitByUtcDay', () => {
  it('uses whole UTC days in the middle and raw edges around them', () => {
    const split = splitByUtcDay(new Date('2026-11-01T05:00:00Z'), new Date('2026-11-04T07:00:00Z'));
    expect(split.fullFrom?.toISOString()).toBe('2026-11-02T00:00:00.000Z');
    expect(split.fullTo?.toISOString()).toBe('2026-11-04T00:00:00.000Z');
    expect(split.edges.map((edge) => [edge.from?.toISOString(), edge.to?.toISOString()])).toEqual([
      ['2026-11-01T05:00:00.000Z', '2026-11-02T00:00:00.000Z'],
      ['2026-11-04T00:00:00.000Z', '2026-11-04T07:00:00.000Z'],
    ]);
  });

  it('needs no edge on aligned bounds and reads raw rows when no whole day fits', () => {
    expect(splitByUtcDay(new Date('2026-11-01'), new Date('2026-11-03')).edges).toEqual([]);
    const short = splitByUtcDay(new Date('2026-11-01T23:00:00Z'), new Date('2026-11-02T01:00:00Z'));
    expect(short.rawOnly).toBe(true);
    expect(short.edges).toHaveLength(1);
    expect(splitByUtcDay(undefined, undefined)).toEqual({ edges: [], rawOnly: false });
  });
});

const AS_OF = new Date('2026-11-02T12:00:00Z');

describe('listWorkloadsPageQuery', () => {
  it('parameterises every value and fetches one row more than the page', () => {
    const query = listWorkloadsPageQuery(
      admin,
      { status: 'running', submittedBy: "x' OR 1=1" },
      null,
      20,
      AS_OF,
    );
    expect(query.text).not.toContain("x' OR");
    expect(query.values).toEqual(['org-a', 'running', "x' OR 1=1", 21, AS_OF]);
  });

  it('merges per initiative for a team scope, matching nothing for an empty one', () => {
    const member = { ...admin, role: 'MEMBER' as const, initiativeIds: [] };
    const query = listWorkloadsPageQuery(member, {}, null, 5, AS_OF);
    expect(query.text).toContain('unnest(');
    expect(query.values).toContainEqual([]);
  });
});

describe('toWorkloadDetail', () => {
  const base: WorkloadDetailRow = {
    workload_id: 'wl-1',
    name: 'n',
    status: 'running',
    submitted_by: 'u',
    initiative_id: 'i',
    instance_type: 't',
    gpu_count: 3,
    gpu_share_units: 3 * 5040,
    gpu_sharing_mode: null,
    gpu_sharing_profile: null,
    gpu_sharing_replicas: null,
    submitted_at: new Date('2026-11-20T08:00:00Z'),
    started_at: new Date('2026-11-20T08:00:00Z'),
    wait_seconds: 0,
    completed_at: null,
    exit_code: null,
    is_managed: true,
    cluster_id: 'c',
    namespace: 'ns',
    finished_duration_seconds: null,
    average_gpu_utilization: null,
    cost: null,
    energy_kwh: null,
    carbon_kg: null,
    idle_cost: null,
    currency: null,
  };

  it('charges a MIG instance its share of the GPU: two 1g.10gb instances for an hour are 2/7 GPU-hour', () => {
    const mig: WorkloadDetailRow = {
      ...base,
      gpu_count: 2,
      gpu_share_units: 2 * 720,
      gpu_sharing_mode: 'mig',
      gpu_sharing_profile: '1g.10gb',
    };
    const detail = toWorkloadDetail(mig, new Date('2026-11-20T09:00:00Z'));
    expect(detail.gpu_share).toBe(0.2857);
    expect(detail.gpu_sharing).toEqual({ mode: 'mig', profile: '1g.10gb' });
    expect(detail.gpu_hours_used).toBe(0.2857);
  });

  it('grows a running workload up to now, in whole seconds', () => {
    const detail = toWorkloadDetail(base, new Date('2026-11-20T09:00:00.999Z'));
    expect(detail.duration_seconds).toBe(3600);
    expect(detail.gpu_hours_used).toBe(3);
  });

  it('gives 0 to a workload that never started and rounds GPU hours to 4 decimals', () => {
    expect(
      toWorkloadDetail({ ...base, status: 'pending', started_at: null }, new Date()).duration_seconds,
    ).toBe(0);
    const finished = { ...base, status: 'completed' as const, finished_duration_seconds: 10 };
    expect(toWorkloadDetail(finished, new Date()).gpu_hours_used).toBe(0.0083);
  });

  it('derives idle GPU-hours and efficiency from the average utilization, null without samples', () => {
    const now = new Date('2026-11-20T09:00:00Z');
    expect(toWorkloadDetail(base, now)).toMatchObject({ idle_gpu_hours: null, gpu_efficiency: null });
    expect(toWorkloadDetail({ ...base, average_gpu_utilization: 37.5 }, now)).toMatchObject({
      gpu_hours_used: 3,
      gpu_efficiency: 0.375,
      idle_gpu_hours: 1.875,
    });
  });
});
