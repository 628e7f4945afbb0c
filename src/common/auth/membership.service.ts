import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { Member } from '../../organizations/entities/member.entity';

@Injectable()
export class MembershipService {
  constructor(@InjectRepository(Member) private readonly members: Repository<Member>) {}

  /** A person's membership in one organization; null when they have none there. */
  find(organizationId: string, subject: string): Promise<Member | null> {
    return this.members.findOne({ where: { organizationId, subject } });
  }
}
