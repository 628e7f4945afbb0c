import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

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
 */
@Injectable()
export class DataVersions {
  private pending: PendingRead | null = null;

  constructor(private readonly dataSource: DataSource) {}

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
          this.readVersions([...organizationIds]).then(resolve, reject);
        });
      }),
    };
    this.pending = read;
    return read;
  }

  private async readVersions(organizationIds: string[]): Promise<Map<string, string>> {
    const rows: { organization_id: string; version: string }[] = await this.dataSource.query(
      `SELECT organization_id, version::text AS version
       FROM organization_data_versions WHERE organization_id = ANY ($1::text[])`,
      [organizationIds],
    );
    return new Map(rows.map((row) => [row.organization_id, row.version]));
  }
}
