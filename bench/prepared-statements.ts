/**
 * npx ts-node --transpile-only bench/prepared-statements.ts [--sizes 1m] [--runs 200] [--only 'capacity|…']
 *
 * Would prepared statements pay? Each endpoint's main statement, built by the
 * service's own query builders with parameters drawn from the benchmark dataset, runs three ways
 * on connections with the service's session settings, interleaved so the host's noise falls on
 * all three alike:
 * - unnamed: what the service sends today (parse, plan and run every time, a custom plan);
 * - prepared: a named statement (parsed once per connection; PostgreSQL plans the first five runs
 *   custom and then keeps a generic plan when its estimate is no worse);
 * - generic: a named statement with plan_cache_mode = force_generic_plan (what a prepared statement
 *   can degrade to: the plan must then be right for every parameter value).
 * Prints a markdown table of median and p90 milliseconds per statement and way.
 */
import { Client } from 'pg';
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { AuthScope } from '../src/common/auth/auth-scope';
import type { ScopedStatement } from '../src/common/database/scoped-statement';
import { usageByInitiativeAndPoolQuery, usageByWindowQuery } from '../src/capacity/capacity.queries';
import type { UsageWindow } from '../src/rollups/capacity-usage/usage-window';
import {
  rankedByGpuHoursQuery,
  seriesQuery,
  windowPercentilesQuery,
  windowStatsQuery,
  workloadWindowQuery,
} from '../src/metrics/metrics.queries';
import { workloadStatsQuery } from '../src/workloads/workload-stats.queries';
import {
  countWorkloadsQuery,
  listWorkloadsPageQuery,
  workloadDetailQuery,
} from '../src/workloads/workloads.queries';
import { ensureDataset } from './dataset';
import { ADMIN_SCOPE, Fixtures, loadFixtures, ORGANIZATION_ID } from './fixtures';
import { parseOptions, takeOption } from './options';

type Way = 'unnamed' | 'prepared' | 'generic';
const WAYS: Way[] = ['unnamed', 'prepared', 'generic'];

interface Candidate {
  name: string;
  /** A statement per run: the parameters vary as a dashboard's requests do. */
  statement: (run: number) => { text: string; values: unknown[] };
}

const DAY_MS = 86_400_000;

function log(line: string): void {
  process.stderr.write(`[prepared] ${line}\n`);
}

/** The text and values of a builder's statement, to run three ways. */
function asStatement(statement: ScopedStatement): { text: string; values: unknown[] } {
  return { text: statement.text, values: statement.values };
}

function candidates(fixtures: Fixtures, now: Date): Candidate[] {
  const member: AuthScope = { ...ADMIN_SCOPE, role: 'MEMBER', initiativeIds: [fixtures.memberInitiative] };
  const ids = fixtures.workloadIds.admin;
  const sampled = fixtures.sampledIds.admin;
  const pick = <T>(list: T[], run: number) => list[run % list.length];
  const daysBefore = (days: number) => new Date(now.getTime() - days * DAY_MS);
  return [
    {
      name: 'version read (every request)',
      statement: () => ({
        text: `SELECT organization_id, version::text AS version
               FROM organization_data_versions WHERE organization_id = ANY ($1::text[])`,
        values: [[ORGANIZATION_ID]],
      }),
    },
    {
      name: 'detail',
      statement: (run) => asStatement(workloadDetailQuery(ADMIN_SCOPE, pick(ids, run), now)),
    },
    {
      name: 'detail, MEMBER',
      statement: (run) =>
        asStatement(workloadDetailQuery(member, pick(fixtures.workloadIds.member, run), now)),
    },
    {
      name: 'series statistics, last 24 h',
      statement: (run) =>
        asStatement(
          windowStatsQuery(ADMIN_SCOPE, pick(sampled, run), daysBefore(1).toISOString(), now.toISOString()),
        ),
    },
    {
      name: 'series window',
      statement: (run) => asStatement(workloadWindowQuery(ADMIN_SCOPE, pick(sampled, run), 86_400, now)),
    },
    {
      name: 'series, step 5m, last 24 h',
      statement: (run) =>
        asStatement(
          seriesQuery(ADMIN_SCOPE, pick(sampled, run), daysBefore(1).toISOString(), now.toISOString(), 300),
        ),
    },
    {
      name: 'series percentiles, last 24 h',
      statement: (run) =>
        asStatement(
          windowPercentilesQuery(
            ADMIN_SCOPE,
            pick(sampled, run),
            daysBefore(1).toISOString(),
            now.toISOString(),
          ),
        ),
    },
    {
      name: 'list page, no filter',
      statement: (run) =>
        asStatement(listWorkloadsPageQuery(ADMIN_SCOPE, {}, null, pick([20, 50, 100], run), now)),
    },
    {
      name: 'list page, status',
      statement: (run) =>
        asStatement(
          listWorkloadsPageQuery(
            ADMIN_SCOPE,
            { status: pick(['running', 'completed', 'failed'], run) },
            null,
            20,
            now,
          ),
        ),
    },
    {
      name: 'list page, initiative, MEMBER',
      statement: () => asStatement(listWorkloadsPageQuery(member, {}, null, 20, now)),
    },
    { name: 'list total_count', statement: () => asStatement(countWorkloadsQuery(ADMIN_SCOPE, {})) },
    {
      name: 'stats, last 7 days',
      statement: () => asStatement(workloadStatsQuery(ADMIN_SCOPE, { from: daysBefore(7), to: now, now })),
    },
    {
      name: 'ranked by gpu_hours',
      statement: (run) =>
        asStatement(
          rankedByGpuHoursQuery(ADMIN_SCOPE, { order: pick(['desc', 'asc'] as const, run), limit: 20 }, now),
        ),
    },
    ...capacityCandidates(fixtures, member, now),
  ];
}

/** Capacity's two statements as the dashboard's queries vary them: scope, initiative filter, burn-down. */
function capacityCandidates(fixtures: Fixtures, member: AuthScope, now: Date): Candidate[] {
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const windows = {
    period: { from: monthStart, to: now },
    burn: { from: new Date(now.getTime() - 7 * DAY_MS), to: now },
  };
  const noFilters = { initiativeId: null, poolId: null };
  const initiatives = fixtures.initiatives.map((initiative) => initiative.id);
  // Local days of a zone five hours behind UTC: every boundary off midnight, as New York's are.
  const days: UsageWindow[] = [];
  for (let from = monthStart.getTime() + 5 * 3_600_000; from < now.getTime(); from += DAY_MS) {
    days.push({ from: new Date(from), to: new Date(Math.min(from + DAY_MS, now.getTime())) });
  }
  return [
    {
      name: 'capacity usage, month to date',
      statement: () => asStatement(usageByInitiativeAndPoolQuery(ADMIN_SCOPE, noFilters, windows)),
    },
    {
      name: 'capacity usage, initiative filter',
      statement: (run) =>
        asStatement(
          usageByInitiativeAndPoolQuery(
            ADMIN_SCOPE,
            { initiativeId: initiatives[run % initiatives.length], poolId: null },
            windows,
          ),
        ),
    },
    {
      name: 'capacity usage, MEMBER',
      statement: () => asStatement(usageByInitiativeAndPoolQuery(member, noFilters, windows)),
    },
    {
      name: 'capacity burn-down, days cut at 05:00 UTC',
      statement: () => asStatement(usageByWindowQuery(ADMIN_SCOPE, noFilters, days, now)),
    },
  ];
}

async function connect(url: string, generic: boolean): Promise<Client> {
  // The service's sessions run without JIT (src/database/data-source-options.ts).
  const client = new Client({ connectionString: url, options: '-c jit=off' });
  await client.connect();
  if (generic) await client.query('SET plan_cache_mode = force_generic_plan');
  return client;
}

async function timeOne(
  client: Client,
  way: Way,
  name: string,
  statement: { text: string; values: unknown[] },
) {
  const started = performance.now();
  if (way === 'unnamed') await client.query(statement.text, statement.values);
  // One name per text: a candidate's variants (desc/asc) are different statements.
  else
    await client.query({
      name: `${name}_${hashOf(statement.text)}`,
      text: statement.text,
      values: statement.values,
    });
  return performance.now() - started;
}

function hashOf(text: string): string {
  return createHash('sha1').update(text).digest('hex').slice(0, 12);
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function main(): Promise<void> {
  const runsOption = takeOption(process.argv.slice(2), '--runs');
  const runs = runsOption.value === null ? 200 : Number(runsOption.value);
  const options = parseOptions([...runsOption.rest, '--keep-dataset']);
  const size = options.sizes.at(-1)!;
  const dataset = await ensureDataset(options.adminUrl, size, options.seed, options, log);
  const fixtures = await loadFixtures(dataset.url);
  const clients: Record<Way, Client> = {
    unnamed: await connect(dataset.url, false),
    prepared: await connect(dataset.url, false),
    generic: await connect(dataset.url, true),
  };
  const now = new Date();
  const lines = [
    `Dataset ${size.label}, ${runs} runs per way, one connection per way, interleaved, measured ${now.toISOString().slice(0, 16)}Z`,
    '(`npx ts-node --transpile-only bench/prepared-statements.ts --sizes ' + size.label + '`).',
    '',
    '| statement | unnamed p50 / p90 ms | prepared p50 / p90 ms | forced generic p50 / p90 ms | prepared ÷ unnamed (p50) |',
    '| - | - | - | - | - |',
  ];
  try {
    const chosen = candidates(fixtures, now).filter(
      (candidate) => !options.only || options.only.some((text) => candidate.name.includes(text)),
    );
    for (const [index, candidate] of chosen.entries()) {
      const name = `bench_prepared_${index}`;
      const times: Record<Way, number[]> = { unnamed: [], prepared: [], generic: [] };
      // Ten untimed runs: the named statements past PostgreSQL's five custom plans, caches warm.
      for (let run = -10; run < runs; run += 1) {
        for (const way of WAYS) {
          const elapsed = await timeOne(clients[way], way, name, candidate.statement(run + 10));
          if (run >= 0) times[way].push(elapsed);
        }
      }
      const cells = WAYS.map((way) => {
        const sorted = times[way].sort((a, b) => a - b);
        return { p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9) };
      });
      const format = (cell: { p50: number; p90: number }) =>
        `${cell.p50.toFixed(2)} / ${cell.p90.toFixed(2)}`;
      lines.push(
        `| ${candidate.name} | ${cells.map(format).join(' | ')} | ${(cells[1].p50 / cells[0].p50).toFixed(2)} |`,
      );
      log(lines.at(-1)!);
    }
  } finally {
    await Promise.all(Object.values(clients).map((client) => client.end()));
  }
  process.stdout.write(`\n${lines.join('\n')}\n`);
}

main().catch((error: unknown) => {
  log(`FAILED: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
