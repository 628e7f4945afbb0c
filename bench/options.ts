import { parseArgs } from 'node:util';

/** A dataset size the benchmark knows how to build: demo-data's --workloads and --samples. */
export interface DatasetSize {
  label: string;
  workloads: number;
  samples: number;
}

/** About 50 samples per workload, the ratio of the 1M workloads / 50M samples. */
export const DATASET_SIZES: Record<string, DatasetSize> = {
  quick: { label: 'quick', workloads: 10_000, samples: 500_000 },
  '100k': { label: '100k', workloads: 100_000, samples: 5_000_000 },
  '1m': { label: '1m', workloads: 1_000_000, samples: 50_000_000 },
  '10m': { label: '10m', workloads: 10_000_000, samples: 500_000_000 },
};

export interface BenchOptions {
  quick: boolean;
  /** Sizes in run order; the last one is the main dataset every endpoint is driven on. */
  sizes: DatasetSize[];
  seed: number;
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  /** Page reached through cursors for the deep-paging scenario (page 500 in the full run). */
  cursorPage: number;
  /** Skip scenarios whose endpoint answers 404 (for use while endpoints are still being built). */
  allowMissing: boolean;
  /** Reuse a dataset of the right size even when the generator or migrations changed since it was built. */
  keepDataset: boolean;
  /** Always rebuild the dataset. */
  rebuild: boolean;
  /** Only run scenarios whose name contains one of these texts (`--only 'a|b'`). */
  only?: string[];
  /** Run the service from the sources through ts-node (bin/gpucap.js) instead of the compiled build. */
  tsNode: boolean;
  /** Write the results into docs/benchmarks.md (the full run does by default, --quick never). */
  writeDocs: boolean;
  /** Where the benchmark databases are created: only its server and credentials are used, not its database. */
  adminUrl: string;
}

const USAGE = `npm run bench -- [--quick] [--sizes 100k,1m] [--samples N] [--duration S] [--warmup S] [--connections N]
                      [--cursor-page N] [--only TEXT] [--allow-missing] [--keep-dataset] [--rebuild] [--no-docs] [--ts-node]`;

/**
 * Takes a script's own `--name value` option (`--name` alone when `hasValue` is false) out of argv,
 * leaving the rest for parseOptions. `value` is null when the option is absent.
 */
export function takeOption(
  argv: string[],
  name: string,
  hasValue = true,
): { value: string | null; rest: string[] } {
  const at = argv.indexOf(name);
  if (at < 0) return { value: null, rest: argv };
  const width = hasValue ? 2 : 1;
  return {
    value: hasValue ? (argv[at + 1] ?? null) : name,
    rest: [...argv.slice(0, at), ...argv.slice(at + width)],
  };
}

export function parseOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      sizes: { type: 'string' },
      seed: { type: 'string', default: '7' },
      samples: { type: 'string' },
      connections: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      'cursor-page': { type: 'string' },
      only: { type: 'string' },
      'allow-missing': { type: 'boolean', default: false },
      'keep-dataset': { type: 'boolean', default: false },
      rebuild: { type: 'boolean', default: false },
      'no-docs': { type: 'boolean', default: false },
      'ts-node': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const quick = values.quick;
  return {
    quick,
    sizes: withSamples(parseSizes(values.sizes ?? (quick ? 'quick' : '100k,1m')), values.samples),
    seed: positiveInteger(values.seed, '--seed'),
    connections: positiveInteger(values.connections ?? (quick ? '10' : '50'), '--connections'),
    durationSeconds: positiveInteger(values.duration ?? (quick ? '2' : '10'), '--duration'),
    warmupSeconds: nonNegativeInteger(values.warmup ?? (quick ? '1' : '3'), '--warmup'),
    cursorPage: positiveInteger(values['cursor-page'] ?? (quick ? '50' : '500'), '--cursor-page'),
    allowMissing: values['allow-missing'],
    keepDataset: values['keep-dataset'],
    // CI's quick run always starts from a fresh 10k dataset (about 20 s), so it tests today's loader too.
    rebuild: values.rebuild || (quick && !values['keep-dataset']),
    only: values.only?.split('|').filter((text) => text.length > 0),
    tsNode: values['ts-node'],
    writeDocs: !quick && !values['no-docs'],
    adminUrl:
      process.env.BENCH_DATABASE_URL ??
      process.env.DATABASE_URL ??
      'postgres://postgres@127.0.0.1:5432/postgres',
  };
}

function parseSizes(text: string): DatasetSize[] {
  return text.split(',').map((label) => {
    const size = DATASET_SIZES[label.trim().toLowerCase()];
    if (!size)
      throw new Error(`--sizes: unknown size '${label}' (known: ${Object.keys(DATASET_SIZES).join(', ')})`);
    return size;
  });
}

/** --samples overrides the sample count of the main (last) size, for a dataset that loads in less time. */
function withSamples(sizes: DatasetSize[], samples: string | undefined): DatasetSize[] {
  if (samples === undefined) return sizes;
  const last = sizes[sizes.length - 1];
  return [...sizes.slice(0, -1), { ...last, samples: nonNegativeInteger(samples, '--samples') }];
}

function positiveInteger(text: string, name: string): number {
  const value = nonNegativeInteger(text, name);
  if (value === 0) throw new Error(`${name} must be a positive integer`);
  return value;
}

function nonNegativeInteger(text: string, name: string): number {
  if (!/^\d+$/.test(text)) throw new Error(`${name} must be an integer, got '${text}'`);
  return Number(text);
}
