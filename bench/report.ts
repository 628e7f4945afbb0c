import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type DatasetMarker, describe } from './dataset';
import { ROOT } from './processes';
import type { BenchRun, ScenarioResult, SizeRun } from './results';

export const GENERATED_START =
  '<!-- bench:generated:start (written by npm run bench; edit outside these markers) -->';
export const GENERATED_END = '<!-- bench:generated:end -->';

const P99_TARGET_MS = 50;
const RATIO_TARGET = 0.5;
const GROWTH_TARGET = 2;
const RSS_TARGET_BYTES = 300 * 1024 * 1024;
const WORKLOADS_PER_SECOND_TARGET = 50_000;
const SAMPLES_PER_SECOND_TARGET = 200_000;

const mb = (bytes: number | null) => (bytes === null ? 'n/a' : `${Math.round(bytes / 1024 / 1024)} MB`);
const int = (value: number) => Math.round(value).toLocaleString('en-US');
/** Failure text goes into table cells: one line, no pipes, short (the JSON keeps it whole). */
const brief = (text: string) => text.replace(/[|\n]/g, ' ').slice(0, 140);
const ms = (value: number) => (value >= 10 ? value.toFixed(0) : value.toFixed(1));

export function writeResultsJson(run: BenchRun): string {
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${run.startedAt.replace(/[:.]/g, '-')}-${run.mode}.json`);
  writeFileSync(file, `${JSON.stringify(run, null, 2)}\n`);
  return file;
}

/** Replaces the generated block of docs/benchmarks.md, leaving everything around it as it is. */
export function writeDocs(markdown: string): string {
  const file = join(ROOT, 'docs', 'benchmarks.md');
  const block = `${GENERATED_START}\n${markdown.trim()}\n${GENERATED_END}`;
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const start = current.indexOf(GENERATED_START);
  const end = current.indexOf(GENERATED_END);
  const next =
    start >= 0 && end > start
      ? current.slice(0, start) + block + current.slice(end + GENERATED_END.length)
      : `${current.trimEnd()}\n\n${block}\n`;
  writeFileSync(file, next);
  return file;
}

/**
 * Replaces what lies between `<!-- NAME:start -->` and `<!-- NAME:end -->` in docs/benchmarks.md: the
 * table a side benchmark writes, with the prose around it left as it is.
 */
export function replaceMarkedBlock(name: string, table: string): void {
  const file = join(ROOT, 'docs', 'benchmarks.md');
  const text = readFileSync(file, 'utf8');
  const [start, end] = [`<!-- ${name}:start -->`, `<!-- ${name}:end -->`];
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from === -1 || to === -1) throw new Error(`docs/benchmarks.md lacks the ${start} … ${end} markers`);
  writeFileSync(file, `${text.slice(0, from + start.length)}\n${table}\n${text.slice(to)}`);
}

export function renderMarkdown(run: BenchRun): string {
  const main = run.runs[run.runs.length - 1];
  return [
    `### Run of ${run.startedAt.slice(0, 16).replace('T', ' ')} UTC (${run.mode})`,
    '',
    renderSetup(run),
    ...(['workloads', 'metrics', 'capacity'] as const).map((section) => renderSection(main, section)),
    renderScaling(run),
    renderTargets(run),
  ].join('\n');
}

function renderSetup(run: BenchRun): string {
  const { machine, settings } = run;
  const lines = [
    `- Machine: ${machine.cpus} CPU (${machine.cpuModel}), ${mb(machine.memoryBytes)} memory, Node ${machine.node}, ` +
      `PostgreSQL ${machine.postgres} on the same machine; load average at start ${machine.loadAverageAtStart
        .map((n) => n.toFixed(2))
        .join(' / ')} (the machine is shared: absolute numbers are context, the same-run ratios count).`,
    `- Command: \`${run.command}\`; service: \`${settings.serviceEntry}\`.`,
    `- Load: autocannon, ${settings.connections} connections, ${settings.durationSeconds} s per scenario after a ` +
      `${settings.warmupSeconds} s warm-up; each request draws its path at random from the scenario's pool. ` +
      `Service and baseline each have a pool of ${settings.databasePoolSize} database connections; ` +
      `RATE_LIMIT_PER_MINUTE=${settings.rateLimitPerMinute} so the limiter never answers 429.`,
  ];
  for (const size of run.runs) {
    lines.push(
      `- Dataset \`${size.databaseName}\` (${size.reused ? 'reused' : 'built in this run'}, ` +
        `seed ${size.dataset.seed}): ${describe(size.dataset)}; the MEMBER token belongs to initiative ` +
        `\`${size.memberInitiative}\`. Service peak RSS (VmHWM) ${mb(size.serviceRssBytes)} ` +
        `(${mb(size.serviceStartupRssBytes)} when it became healthy, before load)` +
        (size.baselineRssBytes !== null ? `, baseline ${mb(size.baselineRssBytes)}` : '') +
        '.',
    );
  }
  if (main(run).baselineSqlSource) lines.push(`- Baseline SQL: ${main(run).baselineSqlSource}.`);
  return `${lines.join('\n')}\n`;
}

function main(run: BenchRun): SizeRun {
  return run.runs[run.runs.length - 1];
}

function renderSection(size: SizeRun, section: ScenarioResult['section']): string {
  const rows = size.scenarios.filter((s) => s.section === section);
  if (rows.length === 0) return '';
  const withBaseline = rows.some((s) => s.baseline);
  const header = withBaseline
    ? '| endpoint | scenario | role | req/s | p50 ms | p99 ms | non-2xx / errors | baseline req/s | baseline p99 ms | ratio |\n| - | - | - | -: | -: | -: | -: | -: | -: | -: |'
    : '| endpoint | scenario | role | req/s | p50 ms | p99 ms | non-2xx / errors |\n| - | - | - | -: | -: | -: | -: |';
  const body = rows.map((s) => {
    const cells = [`\`${s.endpoint}\``, s.name, s.role];
    if (!s.service) {
      cells.push(`*${brief(s.skipped ?? s.failures.join('; '))}*`, '', '', '');
      if (withBaseline) cells.push('', '', '');
    } else {
      const { service } = s;
      cells.push(
        int(service.requestsPerSecond),
        ms(service.p50),
        ms(service.p99),
        `${service.non2xx} / ${service.errors}`,
      );
      if (withBaseline) {
        cells.push(
          s.baseline ? int(s.baseline.requestsPerSecond) : '',
          s.baseline ? ms(s.baseline.p99) : '',
          s.baseline ? ratio(s).toFixed(2) : '',
        );
      }
    }
    return `| ${cells.join(' | ')} |`;
  });
  return `#### ${section[0].toUpperCase()}${section.slice(1)}\n\n${header}\n${body.join('\n')}\n`;
}

function ratio(s: ScenarioResult): number {
  return s.service && s.baseline ? s.service.requestsPerSecond / s.baseline.requestsPerSecond : NaN;
}

interface Growth {
  name: string;
  small?: ScenarioResult;
  large?: ScenarioResult;
  p50Growth: number;
  p99Growth: number;
}

function scalingRows(run: BenchRun): Growth[] {
  if (run.runs.length < 2) return [];
  const small = run.runs[0];
  const large = main(run);
  return large.scenarios
    .filter((s) => s.scaling)
    .map((l) => {
      const s = small.scenarios.find((candidate) => candidate.name === l.name && candidate.role === l.role);
      return {
        name: l.name,
        small: s,
        large: l,
        p50Growth: s?.service && l.service ? l.service.p50 / s.service.p50 : NaN,
        p99Growth: s?.service && l.service ? l.service.p99 / s.service.p99 : NaN,
      };
    });
}

function times(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}×` : 'n/a';
}

function renderScaling(run: BenchRun): string {
  if (run.runs.length < 2) return '';
  const labels = run.runs.map((r) => r.size);
  const rows = scalingRows(run).map((g) => {
    const cells = run.runs.map((r) => {
      const s = r.scenarios.find((c) => c.name === g.name && c.role === 'ORG_ADMIN')?.service;
      return s ? `${ms(s.p50)} / ${ms(s.p99)}` : 'n/a';
    });
    return `| ${g.name} | ${cells.join(' | ')} | ${times(g.p50Growth)} / ${times(g.p99Growth)} |`;
  });
  return [
    `#### Scaling (ORG_ADMIN, p50 / p99 ms at ${run.settings.connections} connections)`,
    '',
    `| scenario | ${labels.join(' | ')} | growth ${labels[0]} → ${labels[labels.length - 1]} |`,
    `| - | ${labels.map(() => '-:').join(' | ')} | -: |`,
    ...rows,
    '',
  ].join('\n');
}

function renderTargets(run: BenchRun): string {
  const size = main(run);
  const driven = size.scenarios.filter((s) => s.service);
  const slow = driven.filter((s) => (s.service?.p99 ?? 0) >= P99_TARGET_MS);
  const failures = run.runs.flatMap((r) =>
    r.scenarios.flatMap((s) => s.failures.map((f) => `${s.name} as ${s.role}: ${brief(f)}`)),
  );
  const skipped = size.scenarios.filter((s) => s.skipped);
  const compared = driven.filter((s) => s.baseline);
  const lowRatio = compared.filter((s) => ratio(s) < RATIO_TARGET);
  const growth = scalingRows(run);
  const fastGrowth = growth.filter((g) => !(g.p50Growth <= GROWTH_TARGET));
  const lines = [
    `- p99 < ${P99_TARGET_MS} ms on every endpoint at ${run.settings.connections} connections (${size.size} dataset): ` +
      (slow.length === 0 && skipped.length === 0
        ? '**met**.'
        : `**missed** by ${slow.map((s) => `${s.name} as ${s.role} (${ms(s.service?.p99 ?? 0)} ms)`).join(', ') || 'none'}` +
          (skipped.length
            ? `; not measured: ${skipped.map((s) => `${s.name} as ${s.role}`).join(', ')}`
            : '') +
          '.'),
    `- 0 errors and 0 non-2xx: ${failures.length === 0 ? '**met**.' : `**missed**: ${failures.join('; ')}.`}`,
    `- List and detail throughput ≥ ${RATIO_TARGET} × raw baseline: ` +
      (compared.length === 0
        ? 'not measured.'
        : lowRatio.length === 0
          ? `**met** (ratios ${compared.map((s) => ratio(s).toFixed(2)).join(', ')}).`
          : `**missed** by ${lowRatio.map((s) => `${s.name} as ${s.role} (${ratio(s).toFixed(2)})`).join(', ')}.`),
    `- Stats, ranked and capacity p50 growth ≤ ${GROWTH_TARGET}× from ${run.runs[0].size} to ${size.size}: ` +
      (growth.length === 0
        ? 'not measured in this run (one dataset size).'
        : fastGrowth.length === 0
          ? '**met**.'
          : `**missed** by ${fastGrowth.map((g) => `${g.name} (${times(g.p50Growth)})`).join(', ')}.`),
    `- Import ≥ ${int(WORKLOADS_PER_SECOND_TARGET)} workloads/s and ≥ ${int(SAMPLES_PER_SECOND_TARGET)} samples/s: ` +
      importTarget(size.dataset),
    `- Service RSS < ${mb(RSS_TARGET_BYTES)} under load: ` +
      (size.serviceRssBytes === null
        ? 'not measured.'
        : size.serviceRssBytes < RSS_TARGET_BYTES
          ? `**met** (peak ${mb(size.serviceRssBytes)}).`
          : `**missed** (peak ${mb(size.serviceRssBytes)}).`),
  ];
  const mismatched = compared.filter((s) => s.sameJson === false);
  if (mismatched.length) {
    lines.push(
      `- Baseline JSON differs from the service's for: ${mismatched.map((s) => `${s.name} as ${s.role} (${s.jsonDifference})`).join('; ')}.`,
    );
  }
  return `#### Targets\n\n${lines.join('\n')}\n`;
}

/** Per INSERT statement when the load was traced (the database work alone), else end to end. */
function importTarget(dataset: DatasetMarker): string {
  const { statements, rows, loadSeconds } = dataset;
  if (statements && statements.workloads.seconds > 0 && statements.samples.seconds > 0) {
    const workloads = statements.workloads.rows / statements.workloads.seconds;
    const samples = statements.samples.rows / statements.samples.seconds;
    const met = workloads >= WORKLOADS_PER_SECOND_TARGET && samples >= SAMPLES_PER_SECOND_TARGET;
    return (
      `the loader's INSERT statements ran at ${int(workloads)} workloads/s (${int(statements.workloads.rows)} rows in ` +
      `${statements.workloads.seconds.toFixed(1)} s) and ${int(samples)} samples/s (${int(statements.samples.rows)} rows in ` +
      `${statements.samples.seconds.toFixed(1)} s), rollup triggers included: ${met ? '**met**' : '**missed** (see the notes)'}.`
    );
  }
  const workloads = rows.workloads / loadSeconds;
  const samples = rows.samples / loadSeconds;
  const met = workloads >= WORKLOADS_PER_SECOND_TARGET && samples >= SAMPLES_PER_SECOND_TARGET;
  return (
    `the whole demo-data load (workloads and samples together, one process) ran at ${int(workloads)} workloads/s ` +
    `and ${int(samples)} samples/s counted over the same ${loadSeconds.toFixed(1)} s, so each rate alone was at least that: ` +
    (met ? '**met**.' : '**not shown** by this end-to-end measurement (see the notes).')
  );
}
