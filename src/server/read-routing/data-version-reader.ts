import type { Pool } from 'pg';
import { DatabaseStallWatch } from '../../database/database-stall-watch';
import {
  type DataVersionRow,
  dataVersionsQuery,
  UNWRITTEN_VERSION,
} from '../../rollups/data-versions/data-versions.queries';

interface PendingRead {
  organizationIds: Set<string>;
  rows: Promise<Map<string, DataVersionRow>>;
}

export interface DataVersionRead {
  version: string;
  /** The statement's start on the server's clock: on the primary, every earlier commit is included. */
  readAt: Date;
  /** The WAL position a replica had replayed; null on the primary. */
  replayed: string | null;
}

/**
 * Reads organizations' data versions (src/rollups/data-versions/) on one server. Every read starts
 * after the request that asked for it arrived, so a write committed before a request is always
 * seen by it; requests arriving in the same event-loop turn share one primary-key lookup, which
 * keeps the check to one small query per turn however many requests a replica serves.
 *
 * The reads have two connections of their own (`pool`): in the request pool they would queue behind
 * the slow queries of cache misses, and every cache hit would wait for a miss to finish.
 */
export class DataVersionReader {
  private pending: PendingRead | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly stallWatch: DatabaseStallWatch,
  ) {}

  current(organizationId: string): Promise<DataVersionRead> {
    const read = this.pending ?? this.scheduleRead();
    read.organizationIds.add(organizationId);
    return read.rows.then((rows) => {
      const row = rows.get(organizationId)!;
      return { version: row.version ?? UNWRITTEN_VERSION, readAt: row.read_at, replayed: row.replayed };
    });
  }

  private scheduleRead(): PendingRead {
    const organizationIds = new Set<string>();
    const read: PendingRead = {
      organizationIds,
      rows: new Promise((resolve, reject) => {
        setImmediate(() => {
          this.pending = null;
          this.stallWatch.watch(() => this.readVersions([...organizationIds])).then(resolve, reject);
        });
      }),
    };
    this.pending = read;
    return read;
  }

  private async readVersions(organizationIds: string[]): Promise<Map<string, DataVersionRow>> {
    const { rows } = await this.pool.query<DataVersionRow>(dataVersionsQuery(organizationIds));
    return new Map(rows.map((row) => [row.organization_id, row]));
  }
}
