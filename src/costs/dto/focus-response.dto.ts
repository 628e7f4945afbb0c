import { ApiProperty } from '@nestjs/swagger';
import { ApiRequestIdProperty } from '../../common/http/envelope-properties';
import { CurrencyMetadataDto } from '../../common/cost.dto';

const DECIMAL_PROPERTY = { type: String, example: '12.34' };

export class FocusTagsDto {
  @ApiProperty({ description: 'who submitted the workload' }) submitted_by: string;
  @ApiProperty({ description: 'the instance type it ran on' }) instance_type: string;
  @ApiProperty({ description: 'the cluster it ran in' }) cluster_id: string;
}

/** One FOCUS 1.2 cost and usage row (column names and values as the specification defines them). */
export class FocusRecordDto {
  @ApiProperty({
    ...DECIMAL_PROPERTY,
    description: 'Decimal: the cost of this part of the run, rounded to the currency’s minor units',
  })
  BilledCost: string;
  @ApiProperty({ description: 'the organization' }) BillingAccountId: string;
  @ApiProperty({ example: 'EUR', description: 'ISO 4217' }) BillingCurrency: string;
  @ApiProperty({ format: 'date-time', description: 'exclusive end of the UTC month of the charge' })
  BillingPeriodEnd: string;
  @ApiProperty({ format: 'date-time', description: 'start of the UTC month of the charge' })
  BillingPeriodStart: string;
  @ApiProperty({ enum: ['Usage'], description: 'every record is usage' }) ChargeCategory: string;
  @ApiProperty({ type: String, nullable: true, description: 'null: no row corrects an earlier one' })
  ChargeClass: null;
  @ApiProperty({ description: 'GPU time of workload <id> on <instance type>' }) ChargeDescription: string;
  @ApiProperty({ enum: ['Usage-Based'], description: 'charged as used' }) ChargeFrequency: string;
  @ApiProperty({
    format: 'date-time',
    description: 'exclusive end: the end of the day, the run or the price period',
  })
  ChargePeriodEnd: string;
  @ApiProperty({ format: 'date-time', description: 'inclusive start, inside one UTC day' })
  ChargePeriodStart: string;
  @ApiProperty({ ...DECIMAL_PROPERTY, description: 'Decimal: GPU-hours (gpu_share × hours), 6 decimals' })
  ConsumedQuantity: string;
  @ApiProperty({ enum: ['GPU-Hours'], description: 'the unit of ConsumedQuantity' }) ConsumedUnit: string;
  @ApiProperty({ ...DECIMAL_PROPERTY, description: 'Decimal: equal to BilledCost (no discount is known)' })
  ContractedCost: string;
  @ApiProperty({ ...DECIMAL_PROPERTY, description: 'Decimal: the imported price per GPU-hour' })
  ContractedUnitPrice: string;
  @ApiProperty({ ...DECIMAL_PROPERTY, description: 'Decimal: equal to BilledCost' }) EffectiveCost: string;
  @ApiProperty({ ...DECIMAL_PROPERTY, description: 'Decimal: equal to BilledCost' }) ListCost: string;
  @ApiProperty({ ...DECIMAL_PROPERTY, description: 'Decimal: the imported price per GPU-hour' })
  ListUnitPrice: string;
  @ApiProperty({
    enum: ['Standard', 'Dynamic', 'Committed', 'Other'],
    description: 'pricing_model on_demand → Standard, spot → Dynamic, reserved → Committed, internal → Other',
  })
  PricingCategory: string;
  @ApiProperty({ ...DECIMAL_PROPERTY, description: 'Decimal: equal to ConsumedQuantity' })
  PricingQuantity: string;
  @ApiProperty({ enum: ['GPU-Hours'], description: 'the unit of the unit prices' }) PricingUnit: string;
  @ApiProperty({ enum: ['gpucap'], description: 'the service that made the record' }) ProviderName: string;
  @ApiProperty({ description: 'the workload id' }) ResourceId: string;
  @ApiProperty({ description: 'the workload name' }) ResourceName: string;
  @ApiProperty({ enum: ['GPU workload'], description: 'what ResourceId names' }) ResourceType: string;
  @ApiProperty({ enum: ['Compute'], description: 'the FOCUS service category' }) ServiceCategory: string;
  @ApiProperty({ enum: ['GPU compute'], description: 'the service charged' }) ServiceName: string;
  @ApiProperty({ description: 'the initiative (team)' }) SubAccountId: string;
  @ApiProperty({ description: 'the initiative’s name' }) SubAccountName: string;
  @ApiProperty({ type: FocusTagsDto, description: 'a JSON object (in CSV: its JSON text)' })
  Tags: FocusTagsDto;
  @ApiProperty({
    ...DECIMAL_PROPERTY,
    nullable: true,
    description:
      'Decimal: kg CO2e of x_EnergyKWh, each sample’s part × pue × g CO2e/kWh of its cluster’s carbon intensity ' +
      'period at its time ÷ 1000, 6 decimals; null where x_EnergyKWh is, or when some of the energy falls where ' +
      'no period covers',
  })
  x_CarbonKgCO2e: string | null;
  @ApiProperty({
    ...DECIMAL_PROPERTY,
    nullable: true,
    description:
      'Decimal: kWh of the samples whose time falls in the charge period, each power held until the next sample ' +
      '(at most max_sample_gap_seconds; the last until completed_at), 6 decimals; null without samples, or ' +
      'before the samples pruned',
  })
  x_EnergyKWh: string | null;
}

export class FocusPageDto {
  @ApiProperty({
    type: [FocusRecordDto],
    description: 'the records of this page’s workloads, oldest submitted first',
  })
  records: FocusRecordDto[];
}

export class FocusMetadataDto extends CurrencyMetadataDto {
  @ApiProperty({ type: String, nullable: true, description: 'null on the last page' })
  next_token: string | null;
}

export class FocusEnvelopeDto {
  @ApiProperty({ type: FocusPageDto, description: 'FOCUS records' }) data: FocusPageDto;
  @ApiProperty({ type: FocusMetadataDto, description: 'paging, the instant and the currency' })
  metadata: FocusMetadataDto;
  @ApiRequestIdProperty()
  request_id: string;
}
