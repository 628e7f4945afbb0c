import type { PricingModel } from '../common/money';
import type { FocusRow } from './focus.queries';

/** Rows of focus.queries.ts shaped into FOCUS 1.2 columns (docs/api.md, "FOCUS export"). */

/** FOCUS PricingCategory of each pricing model. */
export const PRICING_CATEGORY: Record<PricingModel, string> = {
  on_demand: 'Standard',
  spot: 'Dynamic',
  reserved: 'Committed',
  internal: 'Other',
};

/**
 * The FOCUS columns this export fills, in the specification's (alphabetical) order, then its custom
 * columns (FOCUS names them with an `x_` prefix).
 */
export const FOCUS_COLUMNS = [
  'BilledCost',
  'BillingAccountId',
  'BillingCurrency',
  'BillingPeriodEnd',
  'BillingPeriodStart',
  'ChargeCategory',
  'ChargeClass',
  'ChargeDescription',
  'ChargeFrequency',
  'ChargePeriodEnd',
  'ChargePeriodStart',
  'ConsumedQuantity',
  'ConsumedUnit',
  'ContractedCost',
  'ContractedUnitPrice',
  'EffectiveCost',
  'ListCost',
  'ListUnitPrice',
  'PricingCategory',
  'PricingQuantity',
  'PricingUnit',
  'ProviderName',
  'ResourceId',
  'ResourceName',
  'ResourceType',
  'ServiceCategory',
  'ServiceName',
  'SubAccountId',
  'SubAccountName',
  'Tags',
  'x_CarbonKgCO2e',
  'x_EnergyKWh',
] as const;

export type FocusColumn = (typeof FOCUS_COLUMNS)[number];
export type FocusRecordJson = Record<Exclude<FocusColumn, 'Tags'>, string | null> & {
  Tags: { submitted_by: string; instance_type: string; cluster_id: string };
};

/** ISO 8601 in UTC, whole seconds when the instant has no fraction (FOCUS DateTime). */
function focusDateTime(value: Date): string {
  return value.toISOString().replace('.000Z', 'Z');
}

/** The UTC calendar month holding `instant`: the billing period of its charge. */
function billingMonth(instant: Date): { start: Date; end: Date } {
  const start = new Date(Date.UTC(instant.getUTCFullYear(), instant.getUTCMonth(), 1));
  const end = new Date(Date.UTC(instant.getUTCFullYear(), instant.getUTCMonth() + 1, 1));
  return { start, end };
}

/** One charge: a priced part of one workload's run within one UTC day. */
export function toFocusRecord(row: FocusRow, organizationId: string): FocusRecordJson {
  const start = row.period_start as Date;
  const month = billingMonth(start);
  return {
    BilledCost: row.cost,
    BillingAccountId: organizationId,
    BillingCurrency: row.currency,
    BillingPeriodEnd: focusDateTime(month.end),
    BillingPeriodStart: focusDateTime(month.start),
    ChargeCategory: 'Usage',
    ChargeClass: null,
    ChargeDescription: `GPU time of workload ${row.workload_id} on ${row.instance_type}`,
    ChargeFrequency: 'Usage-Based',
    ChargePeriodEnd: focusDateTime(row.period_end as Date),
    ChargePeriodStart: focusDateTime(start),
    ConsumedQuantity: row.gpu_hours,
    ConsumedUnit: 'GPU-Hours',
    ContractedCost: row.cost,
    ContractedUnitPrice: row.unit_price,
    EffectiveCost: row.cost,
    ListCost: row.cost,
    ListUnitPrice: row.unit_price,
    PricingCategory: PRICING_CATEGORY[row.pricing_model as PricingModel],
    PricingQuantity: row.gpu_hours,
    PricingUnit: 'GPU-Hours',
    ProviderName: 'gpucap',
    ResourceId: row.workload_id,
    ResourceName: row.name,
    ResourceType: 'GPU workload',
    ServiceCategory: 'Compute',
    ServiceName: 'GPU compute',
    SubAccountId: row.initiative_id,
    SubAccountName: row.initiative_name,
    Tags: { submitted_by: row.submitted_by, instance_type: row.instance_type, cluster_id: row.cluster_id },
    x_CarbonKgCO2e: row.carbon_kg,
    x_EnergyKWh: row.energy_kwh,
  };
}
