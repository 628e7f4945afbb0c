import { Injectable, Optional } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { LRUCache } from 'lru-cache';
import { Repository } from 'typeorm';
import { Member } from '../../database/entities/member.entity';
import { DatabaseStallWatch } from '../../database/database-stall-watch';
import { ReadReplicas } from '../../database/read-replicas';
import { SingleFlight } from '../single-flight';

/**
 * A membership (or its absence) is trusted for as long as a verified API token
 * (api-token.service.ts): a role change or removal takes effect within a second, and a JWT caller's
 * cached answer is served without waiting for a pool connection behind slow queries.
 */
const MEMBERSHIP_TTL_MS = 1_000;
const MEMBERSHIP_CACHE_SIZE = 10_000;

@Injectable()
export class MembershipService {
  private readonly recent = new LRUCache<string, { member: Member | null }>({
    max: MEMBERSHIP_CACHE_SIZE,
    ttl: MEMBERSHIP_TTL_MS,
  });
  /** Lookups in flight: the requests of the moment a membership expires share one (as API tokens do). */
  private readonly lookups = new SingleFlight<string, Member | null>();

  constructor(
    @InjectRepository(Member) private readonly members: Repository<Member>,
    private readonly stallWatch: DatabaseStallWatch,
    @Optional() private readonly readReplicas?: ReadReplicas,
  ) {}

  /** A person's membership in one organization; null when they have none there. */
  async find(organizationId: string, subject: string): Promise<Member | null> {
    const key = `${organizationId}\n${subject}`;
    const known = this.recent.get(key);
    if (known) return known.member;
    return this.lookups.run(key, async () => {
      const read = (members: Repository<Member>) =>
        this.stallWatch.watch(() => members.findOne({ where: { organizationId, subject } }));
      const member = await (this.readReplicas?.readCredentials(
        () => read(this.members),
        (replica) => read(replica.getRepository(Member)),
      ) ?? read(this.members));
      this.recent.set(key, { member });
      return member;
    });
  }
}
