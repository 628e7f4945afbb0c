import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Role } from '../../core/roles';

/** A person's role and initiatives in one organization; the only source of a JWT caller's access. */
@Entity({ name: 'members' })
export class Member {
  @PrimaryColumn({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @PrimaryColumn({ type: 'text' })
  subject: string;

  @Column({ type: 'text' })
  role: Role;

  @Column({ name: 'initiative_ids', type: 'text', array: true })
  initiativeIds: string[];
}
