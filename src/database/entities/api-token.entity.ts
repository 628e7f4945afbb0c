import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Role } from '../../core/roles';

@Entity({ name: 'api_tokens' })
export class ApiToken {
  @PrimaryColumn({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @PrimaryColumn({ name: 'token_id', type: 'text' })
  tokenId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  role: Role;

  @Column({ name: 'initiative_ids', type: 'text', array: true })
  initiativeIds: string[];

  /** SHA-256 of the secret part; the secret itself is shown once and never stored. */
  @Column({ name: 'secret_hash', type: 'bytea', select: false })
  secretHash: Buffer;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;
}
