import { pruneSamples } from '../../../src/cli/commands/prune.command';
import {
  ensureSamplePartitions,
  partitionBoundsSql,
  SAMPLE_STORES,
  type SampleStore,
} from '../../../src/database/sample-partitions';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';

/**
 * Prune drops weekly partitions while the seal (after every import) and other prunes read them
 * from the catalog. Each race here is microseconds wide, so the checks are loops.
 */

const ROUNDS = 150;
const WEEK = 7 * 86_400_000;
/** A Monday long before any sample the suite writes: each round creates and prunes its week. */
const PRUNED_WEEK = new Date('2001-01-01T00:00:00Z');
const CUTOFF = new Date(PRUNED_WEEK.getTime() + WEEK);

describe('prune beside the seal and other prunes', () => {
  let db: OwnDatabase;

  beforeAll(async () => {
    db = await createOwnDatabase('prune_races', 6);
  });

  afterAll(async () => {
    await db.drop();
  });

  async function createPrunedWeek(): Promise<void> {
    await ensureSamplePartitions(db.dataSource, PRUNED_WEEK, PRUNED_WEEK);
  }

  async function prunedWeekPartitions(): Promise<
    { name: string; range_start: Date | null; range_end: Date | null }[]
  > {
    return db.dataSource.query(
      `SELECT name, range_start, range_end FROM (${partitionBoundsSql(SAMPLE_STORES)}) partitions
       WHERE range_start < $1 ORDER BY range_start`,
      [CUTOFF],
    );
  }

  /**
   * Deparsed with its relation, a bound reads NULL the moment a drop commits (the relation is looked
   * up outside the statement's snapshot), even for a row the statement already passed by its bounds:
   * the seal after an import failed on it. Listings as fast as one connection runs them, each checked.
   */
  it('never lists a partition without both bounds', async () => {
    let pruning = true;
    let prunedPartitions = 0;
    const prune = (async () => {
      try {
        for (let round = 0; round < ROUNDS; round += 1) {
          await createPrunedWeek();
          const { partitions } = await pruneSamples(db.dataSource, CUTOFF);
          prunedPartitions += partitions.length;
        }
      } finally {
        pruning = false;
      }
    })();

    let listings = 0;
    let listed = 0;
    const incomplete: unknown[] = [];
    while (pruning) {
      const rows = await prunedWeekPartitions();
      listings += 1;
      listed += rows.length;
      incomplete.push(...rows.filter((row) => !row.range_start || !row.range_end));
    }
    await prune;

    expect(incomplete).toEqual([]);
    expect(prunedPartitions).toBe(SAMPLE_STORES.length * ROUNDS);
    expect(listings).toBeGreaterThan(ROUNDS);
    expect(listed).toBeGreaterThan(0);
  });

  it('lets prunes run at once: none fails, and every expired week goes', async () => {
    let dropped = 0;
    await Promise.all(
      [0, 1, 2].map(async () => {
        for (let round = 0; round < ROUNDS / 3; round += 1) {
          await createPrunedWeek();
          const { partitions } = await pruneSamples(db.dataSource, CUTOFF);
          dropped += partitions.length;
        }
      }),
    );

    expect(await prunedWeekPartitions()).toEqual([]);
    // Creations and prunes interleave, so a prune may drop part of a week another loop is still creating.
    expect(dropped).toBeGreaterThanOrEqual(SAMPLE_STORES.length);
  });

  it('finishes what a stopped prune left: a detach half done, a week detached and not dropped', async () => {
    await createPrunedWeek();
    const partitionOf = async (store: SampleStore): Promise<string> => {
      const [{ name }] = await db.dataSource.query(
        `SELECT name FROM (${partitionBoundsSql([store])}) partitions WHERE range_start = $1`,
        [PRUNED_WEEK],
      );
      return name;
    };
    const [rows, hours] = [await partitionOf('metric_samples'), await partitionOf('metric_sample_hours')];
    // A reader in a transaction makes the detach wait after its first transaction; a timeout stops it there.
    const reader = db.dataSource.createQueryRunner();
    const detacher = db.dataSource.createQueryRunner();
    try {
      await reader.startTransaction();
      await reader.query('SELECT count(*) FROM metric_samples WHERE sampled_at < $1', [CUTOFF]);
      await detacher.query(`SET statement_timeout = '300ms'`);
      await expect(
        detacher.query(`ALTER TABLE metric_samples DETACH PARTITION "${rows}" CONCURRENTLY`),
      ).rejects.toThrow(/statement timeout/);
      await detacher.query('RESET statement_timeout');
      await reader.rollbackTransaction();
    } finally {
      await reader.release();
      await detacher.release();
    }
    // Stopped between a detach and its drop: a table of its own, no longer a partition.
    await db.dataSource.query(`ALTER TABLE metric_sample_hours DETACH PARTITION "${hours}"`);
    // A later week detached the same way: newer than the cutoff, so it stays.
    await db.dataSource.query('SELECT gpucap_ensure_sample_hour_partitions($1, $1)', [CUTOFF]);
    const [{ name: later }] = await db.dataSource.query(
      `SELECT name FROM (${partitionBoundsSql(['metric_sample_hours'])}) partitions WHERE range_start = $1`,
      [CUTOFF],
    );
    await db.dataSource.query(`ALTER TABLE metric_sample_hours DETACH PARTITION "${later}"`);
    expect(
      await db.dataSource.query(
        `SELECT detach_pending FROM (${partitionBoundsSql(['metric_samples'])}) partitions WHERE name = $1`,
        [rows],
      ),
    ).toEqual([{ detach_pending: true }]);

    const { partitions } = await pruneSamples(db.dataSource, CUTOFF);

    expect(
      partitions.map(({ name, state, range_start, range_end }) => ({ name, state, range_start, range_end })),
    ).toEqual(
      expect.arrayContaining([
        { name: rows, state: 'pending', range_start: PRUNED_WEEK, range_end: CUTOFF },
        { name: hours, state: 'detached', range_start: PRUNED_WEEK, range_end: CUTOFF },
      ]),
    );
    expect(await prunedWeekPartitions()).toEqual([]);
    expect(
      await db.dataSource.query(`SELECT relname FROM pg_class WHERE relname IN ($1, $2, $3)`, [
        rows,
        hours,
        later,
      ]),
    ).toEqual([{ relname: later }]);
    await db.dataSource.query(`DROP TABLE "${later}"`);
  });
});
