import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The layers of src/, lowest first (docs/architecture.md, "Layers"). A file may import from its own
 * layer and the ones below; a feature may not import another feature: what two features share moves
 * down. A new top-level folder must be placed here before anything can import it.
 */
const LAYERS: { name: string; folders: string[]; isolated?: boolean }[] = [
  { name: 'core', folders: ['core'] },
  { name: 'database', folders: ['database', 'rollups', '../migrations'] },
  { name: 'common', folders: ['common'] },
  {
    name: 'features',
    folders: ['workloads', 'metrics', 'capacity', 'costs', 'health', 'web', 'alerts'],
    isolated: true,
  },
  { name: 'write path', folders: ['import'] },
  { name: 'writers', folders: ['ingest', 'demo'], isolated: true },
  { name: 'application', folders: ['app.module.ts', 'app.factory.ts', 'main.ts', 'cli'] },
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
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)) {
    found.push(match[1]);
  }
  return found;
}

function placeOf(path: string): { layer: number; folder: string } | undefined {
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

describe('layers', () => {
  const files = sourceFiles(SRC);

  it('places every top-level folder of src/ in a layer', () => {
    const unplaced = [
      ...new Set(files.filter((file) => !placeOf(file)).map((file) => relative(SRC, file).split('/')[0])),
    ];
    expect(unplaced).toEqual([]);
  });

  it('lets no import point up a layer or across to another feature or writer', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const from = placeOf(file);
      if (!from) continue;
      for (const specifier of specifiers(readFileSync(file, 'utf8'))) {
        if (!specifier.startsWith('.')) {
          if (
            from.layer <= 1 &&
            HTTP_PACKAGES.some((name) => specifier === name || specifier.startsWith(`${name}/`))
          ) {
            wrong.push(`${relative(SRC, file)} -> ${specifier} (HTTP below common)`);
          }
          continue;
        }
        const to = placeOf(resolve(dirname(file), specifier));
        if (!to) continue;
        const across = LAYERS[from.layer].isolated && to.layer === from.layer && to.folder !== from.folder;
        if (to.layer > from.layer || across) {
          wrong.push(
            `${relative(SRC, file)} -> ${specifier} (${LAYERS[from.layer].name} -> ${LAYERS[to.layer].name})`,
          );
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});
