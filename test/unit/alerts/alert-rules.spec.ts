import { evaluateAlerts, fingerprintOf } from '../../../src/alerts/alert-rules';
import type { AlertRules } from '../../../src/alerts/alerts-config';
import type { CapacityReportDto } from '../../../src/capacity/dto/capacity-report.dto';

const RULES: AlertRules = {
  budgetThresholds: [
    { value: 0.75, label: '0.75' },
    { value: 0.9, label: '0.9' },
    { value: 1, label: '1.0' },
  ],
  exhaustionForecast: true,
  idleWorkload: null,
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

  it('identifies an alert by its label set, whatever the order', () => {
    expect(fingerprintOf({ a: '1', b: '2' })).toBe(fingerprintOf({ b: '2', a: '1' }));
    expect(fingerprintOf({ a: '1', b: '2' })).not.toBe(fingerprintOf({ a: '1', b: '3' }));
  });
});
