import { Global, Injectable, Logger, Module, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig, readUrls } from '../core/config/app-config';
import { dataSourceOptions } from './data-source-options';
import { isDatabaseUnavailable } from './database-unavailable';
import { sidePool, VERSION_READ_BOUNDS } from './side-pool';

/** How often the primary's WAL position is sampled and each replica's replay position read. */
const PROBE_INTERVAL_MS = 1000;
/** Samples kept: a replica further behind than this window is only known to be at least that far. */
const SAMPLES_KEPT = 3600;
const PROBE_BOUNDS = { max: 1, connectionTimeoutMillis: 2000, statement_timeout: 2000, query_timeout: 2500 };

/** Where the primary's WAL was at an instant of its own clock. */
interface WalSample {
  lsn: bigint;
  at: number;
}

export interface ReadReplica {
  /** `replica-<n>`, n its position in DATABASE_READ_URLS from 1: host names never leave the process. */
  readonly server: string;
  readonly position: number;
  /** The request statements' connections, bounded as the primary's. */
  readonly pool: Pool;
  readonly probePool: Pool;
  /** The data version reads of requests routed here (kept off the request connections). */
  readonly versionPool: Pool;
  /** Credential reads while the primary cannot be reached: made on first need. */
  credentials?: Promise<DataSource>;
  readonly url: string;
  reachable: boolean;
  /** At the last probe: how long before the primary's latest sample it was at the replayed position. */
  lagMs: number | null;
  inUse: boolean;
}

export interface ReplicaReport {
  replica: number;
  lag_seconds: number | null;
  in_use: boolean;
}

/** `X/Y` (hexadecimal halves) as one number. */
export function parseLsn(text: string): bigint {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/**
 * The streaming replicas of DATABASE_READ_URLS and how far behind the primary each is. Lag is a time:
 * every second the primary's WAL position is sampled with its clock, then each replica's replay
 * position read; a replica has replayed everything the primary had written at the latest sample at or
 * below its position, and its lag is how long before the newest sample that was. A caught-up replica
 * of an idle primary has lag 0, where `pg_last_xact_replay_timestamp()` would grow while nothing is
 * written. A replica unreachable or further behind than READ_REPLICA_MAX_LAG_SECONDS is left out of
 * the read pool until a probe finds it back within the bound; each change is logged once.
 */
@Injectable()
export class ReadReplicas implements OnModuleInit, OnModuleDestroy {
  readonly replicas: ReadReplica[];
  readonly maxLagMs: number;
  /** Requests routed to each server (`primary`, `replica-<n>`), and those retried whole on the primary. */
  readonly routed = new Map<string, number>();
  conflictsRetried = 0;
  private readonly logger = new Logger('ReadReplicas');
  private readonly primaryProbe: Pool | null;
  private samples: WalSample[] = [];
  private timer: NodeJS.Timeout | null = null;
  private probing: Promise<void> | null = null;
  private next = 0;

  constructor(dataSource: DataSource, config: AppConfig) {
    this.maxLagMs = config.READ_REPLICA_MAX_LAG_SECONDS * 1000;
    this.replicas = readUrls(config).map((url, index) => ({
      server: `replica-${index + 1}`,
      position: index + 1,
      pool: sidePool(dataSource, { connectionString: url }),
      probePool: sidePool(dataSource, {
        ...PROBE_BOUNDS,
        connectionString: url,
        application_name: 'gpucap-lag',
      }),
      versionPool: sidePool(dataSource, { ...VERSION_READ_BOUNDS, connectionString: url }),
      url,
      reachable: false,
      lagMs: null,
      inUse: false,
    }));
    this.primaryProbe =
      this.replicas.length > 0
        ? sidePool(dataSource, { ...PROBE_BOUNDS, application_name: 'gpucap-lag' })
        : null;
  }

  get configured(): boolean {
    return this.replicas.length > 0;
  }

  onModuleInit(): void {
    if (!this.configured) return;
    void this.probe();
    this.timer = setInterval(() => void this.probe(), PROBE_INTERVAL_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.probing;
    await Promise.all([
      this.primaryProbe?.end(),
      ...this.replicas.map((replica) =>
        replica.credentials?.then(
          (source) => source.destroy(),
          () => undefined,
        ),
      ),
      ...this.replicas.flatMap((replica) =>
        [replica.pool, replica.probePool, replica.versionPool].map((pool) => pool.end()),
      ),
    ]);
  }

  /** The next replica in the read pool, in turn; undefined when none is. */
  pick(): ReadReplica | undefined {
    const inUse = this.replicas.filter((replica) => replica.inUse);
    if (inUse.length === 0) return undefined;
    this.next = (this.next + 1) % inUse.length;
    return inUse[this.next];
  }

  /**
   * The primary's instant (epoch ms of its clock) before which every write is in a server that has
   * replayed up to `lsn`; undefined when the samples do not reach back that far.
   */
  includedBefore(lsn: string): number | undefined {
    const position = parseLsn(lsn);
    const samples = this.samples;
    let low = 0;
    let high = samples.length - 1;
    let found: WalSample | undefined;
    while (low <= high) {
      const middle = (low + high) >> 1;
      if (samples[middle].lsn <= position) {
        found = samples[middle];
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    return found?.at;
  }

  /**
   * `read` on the primary, where credentials (API tokens, memberships) are read so a revocation applies
   * within a second; only while the primary cannot be reached, on a replica in the read pool, so reads
   * go on from the replicas, as fresh as the bound, during a primary outage.
   */
  async readCredentials<T>(
    onPrimary: () => Promise<T>,
    onReplica: (source: DataSource) => Promise<T>,
  ): Promise<T> {
    try {
      return await onPrimary();
    } catch (error) {
      const replica = isDatabaseUnavailable(error) ? this.pick() : undefined;
      if (!replica) throw error;
      replica.credentials ??= new DataSource(
        dataSourceOptions(replica.url, { poolSize: 2, clientSideTimeout: true, noJit: true }),
      ).initialize();
      replica.credentials.catch(() => (replica.credentials = undefined));
      return onReplica(await replica.credentials);
    }
  }

  /** A replica that failed a request's read leaves the pool until a probe reaches it again. */
  failed(replica: ReadReplica): void {
    replica.reachable = false;
    this.update(replica, null);
  }

  countRouted(server: string): void {
    this.routed.set(server, (this.routed.get(server) ?? 0) + 1);
  }

  report(): ReplicaReport[] {
    return this.replicas.map((replica) => ({
      replica: replica.position,
      lag_seconds: replica.lagMs === null ? null : replica.lagMs / 1000,
      in_use: replica.inUse,
    }));
  }

  private probe(): Promise<void> {
    this.probing ??= this.sampleAndMeasure().finally(() => (this.probing = null));
    return this.probing;
  }

  private async sampleAndMeasure(): Promise<void> {
    await this.samplePrimary();
    await Promise.all(this.replicas.map((replica) => this.measure(replica)));
  }

  private async samplePrimary(): Promise<void> {
    try {
      const { rows } = await this.primaryProbe!.query<{ lsn: string; at: number }>(
        `SELECT pg_current_wal_lsn()::text AS lsn,
                (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS at`,
      );
      this.samples.push({ lsn: parseLsn(rows[0].lsn), at: rows[0].at });
      if (this.samples.length > SAMPLES_KEPT) this.samples = this.samples.slice(-SAMPLES_KEPT);
    } catch {
      // The primary away: its last sample stands, so replicas that replayed all it wrote keep lag 0.
    }
  }

  private async measure(replica: ReadReplica): Promise<void> {
    let lagMs: number | null = null;
    try {
      const { rows } = await replica.probePool.query<{ lsn: string | null }>(
        'SELECT pg_last_wal_replay_lsn()::text AS lsn',
      );
      replica.reachable = true;
      const newest = this.samples.at(-1);
      const replayed = rows[0].lsn;
      const includedBefore = replayed === null ? undefined : this.includedBefore(replayed);
      // A server not in recovery, or behind every sample kept, is never read.
      if (newest && includedBefore !== undefined) lagMs = Math.max(0, newest.at - includedBefore);
    } catch {
      replica.reachable = false;
    }
    this.update(replica, lagMs);
  }

  private update(replica: ReadReplica, lagMs: number | null): void {
    replica.lagMs = lagMs;
    const inUse = replica.reachable && lagMs !== null && lagMs <= this.maxLagMs;
    if (inUse === replica.inUse) return;
    replica.inUse = inUse;
    if (inUse) {
      this.logger.log(`${replica.server} joined the read pool (lag ${(lagMs / 1000).toFixed(1)} s)`);
    } else {
      const why = !replica.reachable
        ? 'unreachable'
        : lagMs === null
          ? 'its position is unknown'
          : `lag ${(lagMs / 1000).toFixed(1)} s`;
      this.logger.warn(`${replica.server} left the read pool (${why}); reading the primary instead`);
    }
  }
}

/** One set of replicas per process, for the router, health and metrics. */
@Global()
@Module({ providers: [ReadReplicas], exports: [ReadReplicas] })
export class ReadReplicasModule {}
