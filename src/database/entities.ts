import { Allocation } from '../capacity/entities/allocation.entity';
import { CapacityPool } from '../capacity/entities/capacity-pool.entity';
import { PoolInstanceType } from '../capacity/entities/pool-instance-type.entity';
import { ApiToken } from '../common/auth/entities/api-token.entity';
import { Initiative } from '../organizations/entities/initiative.entity';
import { Member } from '../organizations/entities/member.entity';
import { Organization } from '../organizations/entities/organization.entity';
import { Workload } from '../workloads/entities/workload.entity';

/** Metric samples have no entity: they are only ever written in bulk and read by aggregate SQL. */
export const ENTITIES = [
  Organization,
  Initiative,
  Member,
  ApiToken,
  Workload,
  CapacityPool,
  PoolInstanceType,
  Allocation,
];
