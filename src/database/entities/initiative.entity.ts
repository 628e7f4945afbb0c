import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'initiatives' })
export class Initiative {
  @PrimaryColumn({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @PrimaryColumn({ name: 'initiative_id', type: 'text' })
  initiativeId: string;

  @Column({ type: 'text' })
  name: string;
}
