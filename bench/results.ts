import type { DatasetMarker } from './dataset';
import type { LoadResult } from './load';
import type { Role, Section } from './scenarios';

export interface ScenarioResult {
  name: string;
  section: Section;
  endpoint: string;
  role: Role;
  scaling: boolean;
  service?: LoadResult;
  baseline?: LoadResult;
  /** Why the scenario was not driven (an endpoint answering 404 with --allow-missing). */
  skipped?: string;
  /** A non-2xx answer or an error: the run fails. */
  failures: string[];
  /** Whether the service and the baseline returned the same JSON (request_id aside); null: not compared. */
  sameJson?: boolean | null;
  jsonDifference?: string;
}

export interface SizeRun {
  size: string;
  databaseName: string;
  dataset: DatasetMarker;
  reused: boolean;
  memberInitiative: string;
  /** Peak RSS of the service once healthy, before any load (start-up, ts-node compilation included). */
  serviceStartupRssBytes: number | null;
  serviceRssBytes: number | null;
  baselineRssBytes: number | null;
  baselineSqlSource: string | null;
  scenarios: ScenarioResult[];
}

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryBytes: number;
  node: string;
  postgres: string;
  loadAverageAtStart: number[];
  hostname: string;
}

export interface BenchRun {
  mode: 'full' | 'quick';
  command: string;
  startedAt: string;
  finishedAt: string;
  machine: Machine;
  settings: {
    connections: number;
    durationSeconds: number;
    warmupSeconds: number;
    cursorPage: number;
    rateLimitPerMinute: number;
    databasePoolSize: number;
    serviceEntry: string;
  };
  runs: SizeRun[];
}

export function failureCount(run: BenchRun): number {
  return run.runs.reduce((sum, size) => sum + size.scenarios.reduce((n, s) => n + s.failures.length, 0), 0);
}
