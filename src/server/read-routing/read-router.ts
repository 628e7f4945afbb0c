import { Injectable, OnModuleDestroy } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { DatabaseStallWatch } from '../../database/database-stall-watch';
import { type ReadReplica, ReadReplicas } from '../../database/read-replicas';
import type { ReadTarget } from '../../database/read-target';
import { sidePool, VERSION_READ_BOUNDS } from '../../database/side-pool';
import { DataVersionReader } from './data-version-reader';

/**
 * Chooses the one server each request reads: a replica in the read pool (ReadReplicas) whose data is
 * at least as new as what this process last answered for the organization and as the page token it
 * continues, else the primary. The choice rests on the organization's data version read on that
 * server, which the response cache then keys on, and names the instant the server's data includes.
 */
@Injectable()
export class ReadRouter implements OnModuleDestroy {
  private readonly primaryVersions: DataVersionReader;
  private readonly replicaVersions = new Map<ReadReplica, DataVersionReader>();
  private readonly primaryPool: Pool;
  /** The newest version routed to per organization: reads of an organization never go backwards. */
  private readonly newest = new Map<string, bigint>();

  constructor(
    dataSource: DataSource,
    stallWatch: DatabaseStallWatch,
    private readonly replicas: ReadReplicas,
  ) {
    this.primaryPool = sidePool(dataSource, VERSION_READ_BOUNDS);
    this.primaryVersions = new DataVersionReader(this.primaryPool, stallWatch);
    for (const replica of replicas.replicas) {
      this.replicaVersions.set(replica, new DataVersionReader(replica.versionPool, stallWatch));
    }
  }

  onModuleDestroy(): Promise<void> {
    return this.primaryPool.end();
  }

  /** The server for a request of `organizationId`, never older than `floor` (a page token's version). */
  async route(organizationId: string, floor?: string): Promise<ReadTarget> {
    const replica = this.replicas.pick();
    const target = replica && (await this.onReplica(replica, organizationId, floor));
    return target ?? this.primary(organizationId);
  }

  async primary(organizationId: string): Promise<ReadTarget> {
    const read = await this.primaryVersions.current(organizationId);
    this.remember(organizationId, read.version);
    this.replicas.countRouted('primary');
    return { server: 'primary', version: read.version, dataAsOf: read.readAt };
  }

  private async onReplica(
    replica: ReadReplica,
    organizationId: string,
    floor: string | undefined,
  ): Promise<ReadTarget | undefined> {
    let read;
    try {
      read = await this.replicaVersions.get(replica)!.current(organizationId);
    } catch {
      this.replicas.failed(replica);
      return undefined;
    }
    const version = BigInt(read.version);
    const lowest = this.newest.get(organizationId) ?? 0n;
    if (version < lowest || (floor !== undefined && version < BigInt(floor))) return undefined;
    const includedBefore = read.replayed === null ? undefined : this.replicas.includedBefore(read.replayed);
    if (includedBefore === undefined) return undefined;
    this.remember(organizationId, read.version);
    this.replicas.countRouted(replica.server);
    return {
      server: replica.server,
      pool: replica.pool,
      version: read.version,
      dataAsOf: new Date(includedBefore),
    };
  }

  private remember(organizationId: string, version: string): void {
    const value = BigInt(version);
    if (value > (this.newest.get(organizationId) ?? 0n)) this.newest.set(organizationId, value);
  }
}
