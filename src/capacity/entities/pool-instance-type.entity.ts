import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Which pool owns an instance type; at most one per organization (the primary key says so). */
@Entity({ name: 'pool_instance_types' })
export class PoolInstanceType {
  @PrimaryColumn({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @PrimaryColumn({ name: 'instance_type', type: 'text' })
  instanceType: string;

  @Column({ name: 'pool_id', type: 'text' })
  poolId: string;
}
