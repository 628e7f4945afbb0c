import { Injectable, OnModuleDestroy } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { sidePool } from '../../database/side-pool';
import { DatabaseStallWatch } from '../../database/database-stall-watch';
import {
  type DataVersionRow,
  dataVersionsQuery,
  UNWRITTEN_VERSION,
} from '../../rollups/data-versions/data-versions.queries';

interface PendingRead {
  organizationIds: Set<string>;
  versions: Promise<Map<string, string>>;
}

/**
 * Reads organizations' data versions (src/rollups/data-versions/) for the response cache. Every read starts
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
    return read.versions.then((versions) => versions.get(organizationId) ?? UNWRITTEN_VERSION);
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
    const { rows } = await this.pool.query<DataVersionRow>(dataVersionsQuery(organizationIds));
    return new Map(rows.map((row) => [row.organization_id, row.version]));
  }
}
