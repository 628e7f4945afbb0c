import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

/** The error a command's config reports as "<file>: <message>", e.g. SyncConfigError. */
export type ConfigErrorClass = new (message: string) => Error;

/**
 * A command's config file (`gpucap sync`, `gpucap alerts`): JSON when the name ends in `.json`, else
 * YAML (a superset of JSON). `base` is its folder, which the paths inside it are relative to.
 */
export function readConfigFile(file: string, fail: ConfigErrorClass): { document: unknown; base: string } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new fail(`cannot read the config file '${file}'`);
  }
  try {
    const document: unknown = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text);
    return { document, base: dirname(resolve(file)) };
  } catch (error) {
    throw new fail(`'${file}' is not valid JSON or YAML: ${(error as Error).message.split('\n')[0]}`);
  }
}

/**
 * A secret given inline or as `<key>_file` (read once, trailing newline dropped), so that configs
 * can stay in version control with the secret mounted beside them.
 */
export function readSecret(
  inline: string | undefined,
  file: string | undefined,
  key: string,
  base: string,
  fail: ConfigErrorClass,
): string | null {
  if (inline != null && file != null) throw new fail(`${key} and ${key}_file exclude each other`);
  if (file == null) return inline ?? null;
  try {
    return readFileSync(configPath(base, file), 'utf8').replace(/\r?\n$/, '');
  } catch {
    throw new fail(`${key}_file: cannot read '${file}'`);
  }
}

/** A path from a config file: absolute as written, else from the file's folder. */
export function configPath(base: string, path: string): string {
  return isAbsolute(path) ? path : resolve(base, path);
}
