import { BaseSchema1763800000000 } from './1763800000000-base-schema';
import { WorkloadRollups1763800001000 } from './1763800001000-workload-rollups';
import { MetricAggregates1763800002000 } from './1763800002000-metric-aggregates';
import { CapacityUsageRollup1763800003000 } from './1763800003000-capacity-usage-rollup';
import { RankedMetricsIndexes1763800005000 } from './1763800005000-ranked-metrics-indexes';
import { RankedMetricTotals1763800006000 } from './1763800006000-ranked-metric-totals';
import { WorkloadPeriodRollups1763800007000 } from './1763800007000-workload-period-rollups';
import { MemberSubmitterIndex1763800008000 } from './1763800008000-member-submitter-index';
import { WriterLocks1763800009000 } from './1763800009000-writer-locks';
import { KnownTimeZones1763800009100 } from './1763800009100-known-time-zones';
import { ImportWritePath1763800010000 } from './1763800010000-import-write-path';
import { SyncWatermarks1763800013000 } from './1763800013000-sync-watermarks';
import { IdleGpuRollups1763800015000 } from './1763800015000-idle-gpu-rollups';
import { DataVersions1763800016000 } from './1763800016000-data-versions';
import { CapacityUsageHourly1763800017000 } from './1763800017000-capacity-usage-hourly';
import { RankedIdleGpuHours1763800018000 } from './1763800018000-ranked-idle-gpu-hours';
import { HourlyUsageCoveringKey1763800019000 } from './1763800019000-hourly-usage-covering-key';
import { AscendingListIndexes1763800020000 } from './1763800020000-ascending-list-indexes';
import { RunningAggregatesIndex1763800021000 } from './1763800021000-running-aggregates-index';
import { GpuShares1763800022000 } from './1763800022000-gpu-shares';
import { SyncWatermarksPerCluster1763800023000 } from './1763800023000-sync-watermarks-per-cluster';
import { AlertStates1763800024000 } from './1763800024000-alert-states';
import { QueueWaitIndex1763800025000 } from './1763800025000-queue-wait-index';
import { GpuPrices1763800027000 } from './1763800027000-gpu-prices';
import { SampleDays1763800028000 } from './1763800028000-sample-days';
import { HourlySeal1763800029000 } from './1763800029000-hourly-seal';
import { InstanceTypeGpus1763800031000 } from './1763800031000-instance-type-gpus';
import { QueueWaitHistograms1763800032000 } from './1763800032000-queue-wait-histograms';
import { WorkloadSampleSummaries1763800033000 } from './1763800033000-workload-sample-summaries';
import { SampleHours1763800035000 } from './1763800035000-sample-hours';
import { SettledCosts1763800036000 } from './1763800036000-settled-costs';
import { EnergyInputs1763800037000 } from './1763800037000-energy-inputs';
import { EnergyAggregates1763800040000 } from './1763800040000-energy-aggregates';
import { ClusterKeys1763800042000 } from './1763800042000-cluster-keys';
import { WorkloadEnergy1763800043000 } from './1763800043000-workload-energy';
import { WaitBlocks1763800044000 } from './1763800044000-wait-blocks';
import { HourTails1763800045000 } from './1763800045000-hour-tails';

/** Every migration, in order. Listed explicitly so ts-node, jest and the compiled build load the same set. */
export const migrations = [
  BaseSchema1763800000000,
  WorkloadRollups1763800001000,
  MetricAggregates1763800002000,
  CapacityUsageRollup1763800003000,
  RankedMetricsIndexes1763800005000,
  RankedMetricTotals1763800006000,
  WorkloadPeriodRollups1763800007000,
  MemberSubmitterIndex1763800008000,
  WriterLocks1763800009000,
  KnownTimeZones1763800009100,
  ImportWritePath1763800010000,
  SyncWatermarks1763800013000,
  IdleGpuRollups1763800015000,
  DataVersions1763800016000,
  CapacityUsageHourly1763800017000,
  RankedIdleGpuHours1763800018000,
  HourlyUsageCoveringKey1763800019000,
  AscendingListIndexes1763800020000,
  RunningAggregatesIndex1763800021000,
  GpuShares1763800022000,
  SyncWatermarksPerCluster1763800023000,
  AlertStates1763800024000,
  QueueWaitIndex1763800025000,
  GpuPrices1763800027000,
  SampleDays1763800028000,
  HourlySeal1763800029000,
  InstanceTypeGpus1763800031000,
  QueueWaitHistograms1763800032000,
  WorkloadSampleSummaries1763800033000,
  SampleHours1763800035000,
  SettledCosts1763800036000,
  EnergyInputs1763800037000,
  EnergyAggregates1763800040000,
  ClusterKeys1763800042000,
  WorkloadEnergy1763800043000,
  WaitBlocks1763800044000,
  HourTails1763800045000,
];
