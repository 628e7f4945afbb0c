import { evaluateAlerts, fingerprintOf } from '../../../src/alerts/alert-rules';
import type { AlertRules } from '../../../src/alerts/alerts-config';
import type { CapacityReportDto } from '../../../src/capacity/dto/capacity-report.dto';
import { GpuCatalogue } from '../../../src/common/gpu-catalogue';
import { adviseWorkload } from '../../../src/recommendations/rightsizing';
import type { WorkloadEvidenceRow } from '../../../src/recommendations/rightsizing.queries';

const RULES: AlertRules = {
  budgetThresholds: [
    { value: 0.75, label: '0.75' },
    { value: 0.9, label: '0.9' },
    { value: 1, label: '1.0' },
  ],
  exhaustionForecast: true,
  idleWorkload: null,
  oversizedWorkload: null,
  syncStaleMinutes: null,
};

function entry(allocated: number, used: number, status = 'on_track', projected: string | null = null) {
  return {
    allocated_gpu_hours: allocated,
    used_gpu_hours: used,
    remaining_gpu_hours: allocated - used,
    burn_rate_gpu_hours_per_day: 2,
    projected_exhaustion_date: projected,
    budget_status: status,
  };
}

function report(
  initiatives: ReturnType<typeof entry>[],
  pools: ReturnType<typeof entry>[] = [],
): CapacityReportDto {
  return {
    organization_id: 'org-acme',
    timezone: 'UTC',
    summary: {},
    pools: pools.map((figures, index) => ({
      pool_id: `pool-${index}`,
      name: `Pool ${index}`,
      instance_types: [],
      ...figures,
    })),
    initiatives: initiatives.map((figures, index) => ({
      initiative_id: `team-${index}`,
      name: `Team ${index}`,
      ...figures,
    })),
    period: { start: '2026-10-01T00:00:00.000Z', end: '2027-01-01T00:00:00.000Z' },
  } as unknown as CapacityReportDto;
}

function evaluate(capacity: CapacityReportDto, rules = RULES) {
  return evaluateAlerts({
    organizationId: 'org-acme',
    rules,
    capacity,
    idle: [],
    advised: [],
    staleSources: [],
  });
}

describe('alert rules', () => {
  it('fires one alert per entry, for the highest threshold crossed, at exactly the share reported', () => {
    const alerts = evaluate(
      report([entry(100, 74.9999), entry(100, 75), entry(100, 90), entry(100, 100), entry(0, 5)]),
    );
    expect(
      alerts.map((alert) => [alert.labels.initiative_id, alert.labels.threshold, alert.labels.severity]),
    ).toEqual([
      ['team-1', '0.75', 'warning'],
      ['team-2', '0.9', 'warning'],
      ['team-3', '1.0', 'critical'],
    ]);
    expect(alerts[1]).toEqual({
      labels: {
        alertname: 'GpuBudgetThresholdCrossed',
        organization_id: 'org-acme',
        kind: 'initiative',
        initiative_id: 'team-2',
        threshold: '0.9',
        severity: 'warning',
      },
      annotations: {
        summary: "Team 'team-2' has used 90 % of its GPU-hour budget",
        description:
          "Team 'team-2' (Team 2) has used 90 of its 100 allocated GPU hours (90 %, threshold 0.9) in the " +
          'budget period 2026-10-01 to 2027-01-01; 10 GPU hours remain.',
      },
      initiativeId: 'team-2',
    });
  });

  it('forecasts only what is at risk, for pools as for teams, with the projected date', () => {
    const alerts = evaluate(
      report(
        [entry(100, 10, 'at_risk', '2026-12-03T00:00:00.000Z')],
        [entry(100, 10, 'exhausted', '2026-11-01T00:00:00.000Z')],
      ),
      { ...RULES, budgetThresholds: [] },
    );
    expect(alerts).toHaveLength(1);
    expect(alerts[0].labels).toEqual({
      alertname: 'GpuBudgetExhaustionForecast',
      organization_id: 'org-acme',
      kind: 'initiative',
      initiative_id: 'team-0',
      severity: 'warning',
    });
    expect(alerts[0].annotations.projected_exhaustion_date).toBe('2026-12-03T00:00:00.000Z');
    expect(
      evaluate(report([entry(100, 10, 'at_risk', '2026-12-03T00:00:00.000Z')]), {
        ...RULES,
        exhaustionForecast: false,
      }),
    ).toEqual([]);
  });

  it('names a pool alert by pool_id and gives it no team', () => {
    const [alert] = evaluate(report([], [entry(10, 9.5)]));
    expect(alert.labels).toMatchObject({ kind: 'pool', pool_id: 'pool-0', threshold: '0.9' });
    expect(alert.labels).not.toHaveProperty('initiative_id');
    expect(alert.initiativeId).toBeNull();
  });

  it('words a stale source from its last success, so its annotations stay the same while it stays stale', () => {
    const alerts = evaluateAlerts({
      organizationId: 'org-acme',
      rules: { ...RULES, budgetThresholds: [], syncStaleMinutes: 30 },
      capacity: report([]),
      idle: [],
      advised: [],
      staleSources: [
        { cluster_id: '', source: 'slurm', updated_at: new Date('2026-11-26T08:00:00Z') },
        { cluster_id: 'gpu-east', source: 'prometheus', updated_at: new Date('2026-11-26T09:00:00Z') },
      ],
    });
    expect(alerts.map((alert) => alert.labels)).toEqual([
      { alertname: 'GpucapSyncStale', organization_id: 'org-acme', source: 'slurm', severity: 'warning' },
      {
        alertname: 'GpucapSyncStale',
        organization_id: 'org-acme',
        source: 'prometheus',
        cluster_id: 'gpu-east',
        severity: 'warning',
      },
    ]);
    expect(alerts[1].annotations).toEqual({
      summary: "Sync source 'prometheus' of cluster 'gpu-east' has not succeeded for more than 30 minutes",
      description:
        "gpucap sync last read 'prometheus' of cluster 'gpu-east' successfully at 2026-11-26T09:00:00.000Z, " +
        "more than 30 minutes ago: the figures of organization 'org-acme' may be out of date.",
    });
    expect(alerts.every((alert) => alert.initiativeId === null)).toBe(true);
  });

  it('fires GpuWorkloadOversized with the recommendation when it saves enough GPU-hours a day', () => {
    const row: WorkloadEvidenceRow = {
      workload_id: 'wl-notebook',
      name: 'notebook',
      initiative_id: 'team-0',
      submitted_by: 'ann@example.com',
      status: 'running',
      instance_type: 'p5.48xlarge',
      cluster_id: 'cl-1',
      gpu_count: 1,
      gpu_share_units: 5040,
      gpu_sharing_mode: null,
      gpu_sharing_profile: null,
      gpu_sharing_replicas: null,
      run_seconds: 86_400,
      sample_count: 1440,
      sampled_seconds: 86_340,
      p95_gpu_utilization: 6,
      p99_memory_utilization: 6.25,
      top_memory_utilization: [...Array(14).fill(6.25), 15],
      price_us: '0',
      priced: false,
    };
    const outcome = adviseWorkload(row, new GpuCatalogue([]).gpusOf('p5.48xlarge'));
    if (!('advice' in outcome)) throw new Error(outcome.reason);
    const evaluateWith = (minimum: number) =>
      evaluateAlerts({
        organizationId: 'org-acme',
        rules: { ...RULES, budgetThresholds: [], oversizedWorkload: { minGpuHoursSavedPerDay: minimum } },
        capacity: report([]),
        idle: [],
        advised: [{ row, advice: outcome.advice }],
        staleSources: [],
      });
    // 6/7 of a GPU freed: 20.5714 GPU-hours a day.
    expect(evaluateWith(20.6)).toEqual([]);
    expect(evaluateWith(20.5)).toEqual([
      {
        labels: {
          alertname: 'GpuWorkloadOversized',
          organization_id: 'org-acme',
          initiative_id: 'team-0',
          workload_id: 'wl-notebook',
          submitted_by: 'ann@example.com',
          severity: 'info',
        },
        annotations: {
          summary:
            "Workload 'wl-notebook' of team 'team-0' could run on 1 × MIG 1g.10gb instead of 1 × H100 80GB, saving 20.5714 GPU-hours a day",
          description:
            "Workload 'wl-notebook' (team 'team-0', submitted by ann@example.com) on p5.48xlarge used at most " +
            '6 % GPU utilization (p95) and 5 GiB of its 80 GiB of GPU memory (p99) over the last 24 hours ' +
            '(1440 samples covering 99.9 % of its run there). 1 × MIG 1g.10gb (10 GiB) covers both with 20 % ' +
            'headroom; 0.1 % of the samples used more memory than that.',
          current: '1 × H100 80GB',
          recommended: '1 × MIG 1g.10gb',
          gpu_hours_saved_per_day: '20.5714',
          risk: '0.0007',
        },
        initiativeId: 'team-0',
      },
    ]);
  });

  it('identifies an alert by its label set, whatever the order', () => {
    expect(fingerprintOf({ a: '1', b: '2' })).toBe(fingerprintOf({ b: '2', a: '1' }));
    expect(fingerprintOf({ a: '1', b: '2' })).not.toBe(fingerprintOf({ a: '1', b: '3' }));
  });
});
