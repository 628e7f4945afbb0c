import { ApiProperty } from '@nestjs/swagger';
import { AsOfMetadataDto } from './http/as-of-metadata.dto';

/** `metadata` of the answers that carry amounts of money. */
export class CurrencyMetadataDto extends AsOfMetadataDto {
  @ApiProperty({
    type: String,
    nullable: true,
    example: 'EUR',
    description:
      'Additive: the ISO 4217 currency of every amount in the answer (one per organization, from its imported prices); null while it has no price',
  })
  currency: string | null;
}

/** The descriptions of the money beside a set's GPU-hours (statistics' summary, groups, buckets). */
export const CostFiguresDto = {
  TOTAL_COST:
    'Additive: what the priced GPU-hours of the set cost, gpu_share × hours × the price of the period each part ran in (running workloads up to as_of), in metadata.currency: an exact decimal rounded once to the currency’s minor units (e.g. "1234.57"); the GPU-hours without a price are left out (unpriced_gpu_hours). null when the organization has no price',
  UNPRICED: 'Additive: GPU-hours of the set that no price period covers (left out of total_cost)',
  IDLE_COST:
    'Additive: the money of the priced part of idle_gpu_hours: each priced part of a run with samples × (1 − its average GPU utilization / 100) × its price, exact, rounded once; idle time without a price is left out (it is within unpriced_gpu_hours). null when the organization has no price',
} as const;
