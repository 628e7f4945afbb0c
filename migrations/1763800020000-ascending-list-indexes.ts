import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * The list's six keyset indexes, ascending instead of descending. Pages
 * are read newest first either way: a B-tree scanned backwards returns (submitted_at DESC,
 * workload_id DESC), so every list plan keeps its index and its Limit without a Sort.
 *
 * Why: workloads arrive roughly in submission order. In a descending index each new entry lands at
 * the left edge of its key range, where a full page splits in half and the left half is never
 * filled again. Ascending, the entries of the last key range land on the index's rightmost page,
 * which PostgreSQL splits unevenly for exactly this pattern, leaving full pages behind; the other
 * ranges (one per initiative, status or submitter) half-fill their pages in either order: smaller
 * indexes and a faster INSERT, measured in docs/benchmarks.md.
 */
const INDEXES: { name: string; key: string }[] = [
  { name: 'workloads_org_submitted', key: 'organization_id' },
  { name: 'workloads_org_initiative_submitted', key: 'organization_id, initiative_id' },
  { name: 'workloads_org_status_submitted', key: 'organization_id, status' },
  { name: 'workloads_org_submitter_submitted', key: 'organization_id, submitted_by' },
  { name: 'workloads_org_initiative_status_submitted', key: 'organization_id, initiative_id, status' },
  {
    name: 'workloads_org_initiative_submitter_submitted',
    key: 'organization_id, initiative_id, submitted_by',
  },
];

export class AscendingListIndexes1763800020000 implements MigrationInterface {
  name = 'AscendingListIndexes1763800020000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await this.rebuild(queryRunner, 'submitted_at, workload_id');
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await this.rebuild(queryRunner, 'submitted_at DESC, workload_id DESC');
  }

  private async rebuild(queryRunner: QueryRunner, order: string): Promise<void> {
    for (const { name, key } of INDEXES) {
      await queryRunner.query(`DROP INDEX ${name}`);
      await queryRunner.query(`CREATE INDEX ${name} ON workloads (${key}, ${order})`);
    }
  }
}
