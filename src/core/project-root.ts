import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The checkout's root (where package.json is), whether running from src/ under ts-node or from dist/. */
export function projectRoot(start = __dirname): string {
  for (let directory = start; ; directory = dirname(directory)) {
    if (existsSync(join(directory, 'package.json'))) return directory;
    if (dirname(directory) === directory) return process.cwd();
  }
}
