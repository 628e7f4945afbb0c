import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import type { AggregateReadGate } from '../../common/http/aggregate-read/aggregate-read-gate';
import type { ReadReplicas } from '../../database/read-replicas';
import type { ResponseCache } from '../response-cache/response-cache';

interface PgPool {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/** Latency buckets (seconds) around the targets: warm answers in milliseconds, cold ones up to seconds. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The service's Prometheus metrics, in a registry of its own (several apps in one process, as in
 * the tests, never share counters). Routes are labelled by their template (`/v1/workloads/:workload_id`),
 * never by the raw URL, so label cardinality stays bounded whatever callers send.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'gpucap_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'gpucap_http_request_duration_seconds',
    help: 'Time from receiving a request to finishing its answer, by route template and status',
    labelNames: ['method', 'route', 'status'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  constructor(dataSource: DataSource, cache: ResponseCache, gate: AggregateReadGate, replicas: ReadReplicas) {
    collectDefaultMetrics({ register: this.registry });
    this.poolGauges(dataSource);
    this.cacheMetrics(cache);
    this.gateGauges(gate);
    if (replicas.configured) this.replicaMetrics(replicas);
  }

  /** Express middleware: counts and times every answer once it is finished. */
  readonly recordRequests = (request: Request, response: Response, next: NextFunction): void => {
    const stop = this.latency.startTimer();
    response.once('finish', () => {
      const labels = { method: request.method, route: routeOf(request), status: String(response.statusCode) };
      this.requests.inc(labels);
      stop(labels);
    });
    next();
  };

  private poolGauges(dataSource: DataSource): void {
    const pool = () =>
      dataSource.isInitialized ? (dataSource.driver as unknown as { master?: PgPool }).master : undefined;
    this.gauge('gpucap_db_pool_connections_in_use', 'Database connections checked out by requests', () => {
      const current = pool();
      return current ? current.totalCount - current.idleCount : 0;
    });
    this.gauge(
      'gpucap_db_pool_waiting_requests',
      'Requests waiting for a database connection',
      () => pool()?.waitingCount ?? 0,
    );
  }

  private cacheMetrics(cache: ResponseCache): void {
    new Counter({
      name: 'gpucap_response_cache_requests_total',
      help: 'JSON answers by how the response cache served them: hit, miss (computed), coalesced (joined a computation in flight)',
      labelNames: ['outcome'],
      registers: [this.registry],
      // The cache keeps the counts; a scrape reads them.
      collect() {
        this.reset();
        for (const [outcome, count] of Object.entries(cache.outcomes)) this.inc({ outcome }, count);
      },
    });
    this.gauge('gpucap_response_cache_bytes', 'JSON bytes the response cache holds', () => cache.bytes);
  }

  private gateGauges(gate: AggregateReadGate): void {
    this.gauge(
      'gpucap_aggregate_reads_running',
      'Statistics and capacity reads computing now (at most AGGREGATE_READ_CONCURRENCY)',
      () => gate.runningCount,
    );
    this.gauge(
      'gpucap_aggregate_reads_waiting',
      'Statistics and capacity reads waiting for their turn to compute',
      () => gate.waitingCount,
    );
  }

  private replicaMetrics(replicas: ReadReplicas): void {
    new Gauge({
      name: 'gpucap_read_replica_lag_seconds',
      help: 'How far each streaming replica (by position in DATABASE_READ_URLS) is behind the primary; NaN while unreachable',
      labelNames: ['replica'],
      registers: [this.registry],
      collect() {
        for (const replica of replicas.replicas) {
          this.set(
            { replica: String(replica.position) },
            replica.lagMs === null ? NaN : replica.lagMs / 1000,
          );
        }
      },
    });
    new Gauge({
      name: 'gpucap_read_replica_in_use',
      help: 'Whether reads go to each streaming replica (1) or it is out of the read pool (0)',
      labelNames: ['replica'],
      registers: [this.registry],
      collect() {
        for (const replica of replicas.replicas)
          this.set({ replica: String(replica.position) }, replica.inUse ? 1 : 0);
      },
    });
    new Counter({
      name: 'gpucap_read_requests_total',
      help: 'Requests routed to each database server: primary or replica-<position>',
      labelNames: ['server'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [server, count] of replicas.routed) this.inc({ server }, count);
      },
    });
    new Counter({
      name: 'gpucap_read_conflicts_retried_total',
      help: 'Requests whose statement a replica cancelled for a recovery conflict, run again on the primary',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(replicas.conflictsRetried);
      },
    });
  }

  /** A gauge whose value is read at each scrape. */
  private gauge(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }
}

/** The matched route's template; what no route matched (the page, its assets, 404s) by a fixed name. */
function routeOf(request: Request): string {
  const template = (request.route as { path?: unknown } | undefined)?.path;
  if (typeof template === 'string') return template;
  if (request.path === '/metrics') return '/metrics';
  return request.path.startsWith('/v1/') ? 'unmatched' : 'static';
}

/**
 * `GET /metrics` in Prometheus' text format. With METRICS_TOKEN set, only `Authorization: Bearer
 * <token>` is answered (compared in constant time); a wrong or missing one gets a bare 401.
 */
export function metricsEndpoint(metrics: ServiceMetrics, token: string | undefined) {
  const expected = token === undefined ? null : digest(token);
  return async (request: Request, response: Response): Promise<void> => {
    if (expected && !timingSafeEqual(digest(bearerOf(request)), expected)) {
      response.status(401).setHeader('WWW-Authenticate', 'Bearer realm="gpucap metrics"').end();
      return;
    }
    response.setHeader('Content-Type', metrics.registry.contentType);
    response.setHeader('Cache-Control', 'no-store');
    response.end(await metrics.registry.metrics());
  };
}

function bearerOf(request: Request): string {
  const match = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '');
  return match ? match[1] : '';
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
