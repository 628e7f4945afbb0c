import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The layers of src/, lowest first (docs/architecture.md, "Layers"). A file may import from its own
 * layer and the ones below; a feature may not import another feature (FEATURE_DEPENDENCIES names the
 * one exception): what two features share moves down. A new top-level folder must be placed here
 * before anything can import it.
 */
const LAYERS: { name: string; folders: string[]; isolated?: boolean }[] = [
  { name: 'core', folders: ['core'] },
  { name: 'database', folders: ['database', '../migrations'] },
  { name: 'common', folders: ['common'] },
  { name: 'rollups', folders: ['rollups'] },
  {
    name: 'features',
    folders: ['workloads', 'metrics', 'capacity', 'costs', 'health', 'web', 'alerts', 'recommendations'],
    isolated: true,
  },
  { name: 'write path', folders: ['import'] },
  { name: 'writers', folders: ['ingest', 'demo'], isolated: true },
  { name: 'application', folders: ['app.module.ts', 'app.factory.ts', 'main.ts', 'cli', 'server'] },
];

/**
 * The imports allowed across features, by name: alerts fire on what other features report, so they
 * read the capacity report's budgets and the recommendations' rule rather than second copies of them.
 */
const FEATURE_DEPENDENCIES: readonly (readonly [from: string, to: string])[] = [
  ['alerts', 'capacity'],
  ['alerts', 'recommendations'],
];

/** Whatever serves HTTP stays out of the two lowest layers. */
const HTTP_PACKAGES = [
  '@nestjs/platform-express',
  '@nestjs/swagger',
  '@nestjs/passport',
  'express',
  'passport',
];

const SRC = resolve(__dirname, '../../../src');

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    // A rollup's recomputation test sits in its folder but is a test, outside the layers.
    return entry.name.endsWith('.ts') && !entry.name.endsWith('-spec.ts') ? [path] : [];
  });
}

function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)) {
    found.push(match[1]);
  }
  return found;
}

/**
 * A rollup's definitions are schema: `gpucap migrate` (database) applies them, so they sit in the
 * database layer wherever their folder is; the rest of the folder, its readers, sits above common.
 */
const DEFINITIONS_FILE = /\/rollups\/[^/]+\/[^/]+\.definitions(\.ts)?$/;

function placeOf(path: string): { layer: number; folder: string } | undefined {
  if (DEFINITIONS_FILE.test(path))
    return { layer: LAYERS.findIndex(({ name }) => name === 'database'), folder: 'database' };
  const top = relative(SRC, path).split('/')[0];
  for (const [layer, { folders }] of LAYERS.entries()) {
    for (const folder of folders) {
      if (
        top === folder ||
        top === folder.replace(/\.ts$/, '') ||
        (folder.startsWith('..') && path.startsWith(resolve(SRC, folder)))
      ) {
        return { layer, folder };
      }
    }
  }
  return undefined;
}

/** Why the import of `specifier` from `file` breaks the layers, or undefined when it does not. */
function layerBreach(file: string, specifier: string): string | undefined {
  const from = placeOf(file);
  if (!from) return undefined;
  if (!specifier.startsWith('.')) {
    const http =
      from.layer <= 1 && HTTP_PACKAGES.some((name) => specifier === name || specifier.startsWith(`${name}/`));
    return http ? `${relative(SRC, file)} -> ${specifier} (HTTP below common)` : undefined;
  }
  const to = placeOf(resolve(dirname(file), specifier));
  if (!to) return undefined;
  const across =
    LAYERS[from.layer].isolated &&
    to.layer === from.layer &&
    to.folder !== from.folder &&
    !FEATURE_DEPENDENCIES.some(([source, target]) => source === from.folder && target === to.folder);
  if (to.layer <= from.layer && !across) return undefined;
  return `${relative(SRC, file)} -> ${specifier} (${LAYERS[from.layer].name} -> ${LAYERS[to.layer].name})`;
}

describe('layers', () => {
  const files = sourceFiles(SRC);

  it('places every top-level folder of src/ in a layer', () => {
    const unplaced = [
      ...new Set(files.filter((file) => !placeOf(file)).map((file) => relative(SRC, file).split('/')[0])),
    ];
    expect(unplaced).toEqual([]);
  });

  it('lets no import point up a layer or across to another feature or writer', () => {
    const wrong = files.flatMap((file) =>
      specifiers(readFileSync(file, 'utf8')).flatMap((specifier) => layerBreach(file, specifier) ?? []),
    );
    expect(wrong).toEqual([]);
  });

  it('allows alerts -> capacity and alerts -> recommendations, and no other import across features', () => {
    const feature = (name: string) => join(SRC, name, 'example.ts');
    expect(layerBreach(feature('alerts'), '../capacity/capacity.service')).toBeUndefined();
    expect(layerBreach(feature('alerts'), '../recommendations/rightsizing')).toBeUndefined();
    expect(layerBreach(feature('recommendations'), '../alerts/alerts.service')).toBe(
      'recommendations/example.ts -> ../alerts/alerts.service (features -> features)',
    );
    expect(layerBreach(feature('capacity'), '../alerts/alerts.service')).toBe(
      'capacity/example.ts -> ../alerts/alerts.service (features -> features)',
    );
    expect(layerBreach(feature('costs'), '../capacity/capacity.service')).toBe(
      'costs/example.ts -> ../capacity/capacity.service (features -> features)',
    );
    expect(layerBreach(feature('alerts'), '../costs/costs.service')).toBe(
      'alerts/example.ts -> ../costs/costs.service (features -> features)',
    );
    expect(layerBreach(join(SRC, 'ingest', 'example.ts'), '../demo/demo-data')).toBe(
      'ingest/example.ts -> ../demo/demo-data (writers -> writers)',
    );
  });
});
