import { Injectable, OnModuleDestroy } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { sidePool } from '../../database/side-pool';
import { DatabaseStallWatch } from '../../database/database-stall-watch';

interface PendingRead {
  organizationIds: Set<string>;
  versions: Promise<Map<string, string>>;
}

/** Version of an organization that no writer has touched since migration …16000. */
const UNWRITTEN = '0';

/**
 * Reads organizations' data versions (migration …16000) for the response cache. Every read starts
 * after the request that asked for it arrived, so a write committed before a request is always
 * seen by it; requests arriving in the same event-loop turn share one primary-key lookup, which
 * keeps the check to one small query per turn however many requests a replica serves.
 *
 * The reads have two connections of their own: in the request pool they would queue behind the
 * slow queries of cache misses, and every cache hit would wait for a miss to finish.
 */
@Injectable()
export class DataVersions implements OnModuleDestroy {
  private pending: PendingRead | null = null;
  private readonly pool: Pool;

  constructor(
    dataSource: DataSource,
    private readonly stallWatch: DatabaseStallWatch,
  ) {
    // Two connections and a tight statement bound: a version read is one primary-key lookup.
    this.pool = sidePool(dataSource, {
      max: 2,
      statement_timeout: 2000,
      query_timeout: 3000,
      application_name: 'gpucap-versions',
    });
  }

  onModuleDestroy(): Promise<void> {
    return this.pool.end();
  }

  current(organizationId: string): Promise<string> {
    const read = this.pending ?? this.scheduleRead();
    read.organizationIds.add(organizationId);
    return read.versions.then((versions) => versions.get(organizationId) ?? UNWRITTEN);
  }

  private scheduleRead(): PendingRead {
    const organizationIds = new Set<string>();
    const read: PendingRead = {
      organizationIds,
      versions: new Promise((resolve, reject) => {
        setImmediate(() => {
          this.pending = null;
          this.stallWatch.watch(() => this.readVersions([...organizationIds])).then(resolve, reject);
        });
      }),
    };
    this.pending = read;
    return read;
  }

  private async readVersions(organizationIds: string[]): Promise<Map<string, string>> {
    // Named: parsed and planned once per connection (measured by bench/prepared-statements.ts).
    const { rows } = await this.pool.query<{ organization_id: string; version: string }>({
      name: 'gpucap_data_versions',
      text: `SELECT organization_id, version::text AS version
             FROM organization_data_versions WHERE organization_id = ANY ($1::text[])`,
      values: [organizationIds],
    });
    return new Map(rows.map((row) => [row.organization_id, row.version]));
  }
}
