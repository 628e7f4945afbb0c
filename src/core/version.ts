import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The version in package.json, found from here in the sources (src/core) and the build (dist/src/core):
 * health, OpenAPI and `gpucap --version` all report this one, so no copy can fall behind.
 */
export function packageVersion(): string {
  for (let directory = __dirname, depth = 0; depth < 5; directory = dirname(directory), depth += 1) {
    try {
      const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === 'gpucap' && manifest.version) return manifest.version;
    } catch {
      // not this directory
    }
  }
  return 'unknown';
}

export const API_VERSION = packageVersion();
