import { capacityUsageDefinitions } from '../../rollups/capacity-usage/capacity-usage.definitions';
import { dataVersionDefinitions } from '../../rollups/data-versions/data-versions.definitions';
import { energyDefinitions } from '../../rollups/metric-aggregates/energy.definitions';
import { metricAggregateDefinitions } from '../../rollups/metric-aggregates/metric-aggregates.definitions';
import { queueWaitDefinitions } from '../../rollups/queue-waits/queue-waits.definitions';
import { sampleHourDefinitions } from '../../rollups/metric-aggregates/sample-hours.definitions';
import { rankedTotalDefinitions } from '../../rollups/ranked-totals/ranked-totals.definitions';
import { workloadCostDefinitions } from '../../rollups/workload-costs/workload-costs.definitions';
import { workloadEnergyDefinitions } from '../../rollups/workload-energy/workload-energy.definitions';
import { workloadPeriodDefinitions } from '../../rollups/workload-periods/workload-periods.definitions';
import { workloadSummaryDefinitions } from '../../rollups/workload-summaries/workload-summaries.definitions';
import { carbonIntensityDefinitions } from './carbon-intensities.definitions';
import type { Definition } from './definition';
import { priceDefinitions } from './prices.definitions';
import { sampleStoreDefinitions } from './sample-store.definitions';
import { timeZoneDefinitions } from './time-zones.definitions';
import { writerLockDefinitions } from './writer-locks.definitions';

/**
 * Every function and trigger the database runs, each written once: the shared ones here, each
 * rollup's in its own folder under src/rollups/. `gpucap migrate` applies them after the migrations.
 */
export const definitions: Definition[] = [
  ...timeZoneDefinitions,
  ...writerLockDefinitions,
  ...sampleStoreDefinitions,
  ...priceDefinitions,
  ...carbonIntensityDefinitions,
  ...dataVersionDefinitions,
  ...metricAggregateDefinitions,
  ...energyDefinitions,
  ...sampleHourDefinitions,
  ...workloadCostDefinitions,
  ...workloadEnergyDefinitions,
  ...workloadPeriodDefinitions,
  ...queueWaitDefinitions,
  ...capacityUsageDefinitions,
  ...rankedTotalDefinitions,
  ...workloadSummaryDefinitions,
];
