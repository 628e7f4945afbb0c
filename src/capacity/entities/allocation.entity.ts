import { Column, Entity, PrimaryColumn } from 'typeorm';

/** GPU hours given to one initiative in one pool for the organization's current budget period. */
@Entity({ name: 'allocations' })
export class Allocation {
  @PrimaryColumn({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @PrimaryColumn({ name: 'initiative_id', type: 'text' })
  initiativeId: string;

  @PrimaryColumn({ name: 'pool_id', type: 'text' })
  poolId: string;

  @Column({ name: 'allocated_gpu_hours', type: 'double precision' })
  allocatedGpuHours: number;
}
