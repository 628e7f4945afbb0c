import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'capacity_pools' })
export class CapacityPool {
  @PrimaryColumn({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @PrimaryColumn({ name: 'pool_id', type: 'text' })
  poolId: string;

  @Column({ type: 'text' })
  name: string;
}
