/** The descriptions of the energy beside a set's GPU-hours (statistics' summary, groups, buckets; capacity). */
export const EnergyFiguresDto = {
  TOTAL_ENERGY:
    'Additive: kWh the workloads of the set drew (4 decimals): Σ energy_kwh of finished ones, and the samples so far of running ones; 0 without samples (see "Energy and carbon")',
  TOTAL_CARBON:
    'Additive: kg CO2e (4 decimals) of the part of total_energy_kwh that a carbon intensity period covers; the rest is uncovered_energy_kwh',
  UNCOVERED:
    'Additive: kWh of total_energy_kwh at times no carbon intensity period of the workload’s cluster covers (left out of total_carbon_kg)',
} as const;
