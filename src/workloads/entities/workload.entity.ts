import { Column, Entity, PrimaryColumn } from 'typeorm';

export const WORKLOAD_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
export type WorkloadStatus = (typeof WORKLOAD_STATUSES)[number];

@Entity({ name: 'workloads' })
export class Workload {
  @PrimaryColumn({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @PrimaryColumn({ name: 'workload_id', type: 'text' })
  workloadId: string;

  @Column({ name: 'initiative_id', type: 'text' })
  initiativeId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  status: WorkloadStatus;

  @Column({ name: 'submitted_by', type: 'text' })
  submittedBy: string;

  @Column({ name: 'instance_type', type: 'text' })
  instanceType: string;

  @Column({ name: 'gpu_count', type: 'integer' })
  gpuCount: number;

  @Column({ name: 'is_managed', type: 'boolean' })
  isManaged: boolean;

  @Column({ name: 'cluster_id', type: 'text' })
  clusterId: string;

  @Column({ type: 'text' })
  namespace: string;

  @Column({ name: 'submitted_at', type: 'timestamptz' })
  submittedAt: Date;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt: Date | null;

  @Column({ name: 'exit_code', type: 'integer', nullable: true })
  exitCode: number | null;
}
