import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'organizations' })
export class Organization {
  @PrimaryColumn({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @Column({ type: 'text' })
  name: string;

  /** IANA time zone name; calendar ranges such as `today` are taken in it. */
  @Column({ type: 'text' })
  timezone: string;

  @Column({ name: 'budget_period_start', type: 'timestamptz' })
  budgetPeriodStart: Date;

  @Column({ name: 'budget_period_end', type: 'timestamptz' })
  budgetPeriodEnd: Date;
}
