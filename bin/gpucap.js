#!/usr/bin/env node
'use strict';
// In a checkout the CLI runs from the TypeScript sources (transpile only, no build step);
// a production image runs the compiled output (NODE_ENV=production, after `npm run build`).
const path = require('node:path');
const fs = require('node:fs');
const { spawn } = require('node:child_process');

// An import streams any input size with little live data, but V8 grows its heap far past what is live
// when nothing caps it (docs/benchmarks.md, "Import memory"): it runs with a cap
// unless the caller chose one.
const HEAP_FLAG = '--max-old-space-size';
// sync holds one query window of DCGM series at a time: the cap keeps its RSS to about this size.
const HEAP_CAP_MB = { import: 320, sync: 384 };
const heapCapped = [...process.execArgv, process.env.NODE_OPTIONS || ''].some((arg) =>
  arg.includes(HEAP_FLAG),
);
// Help and the version are answered at once: no second process for them.
const argsBeforeEnd = process.argv.slice(
  2,
  process.argv.includes('--') ? process.argv.indexOf('--') : undefined,
);
const onlyAsking =
  ['help', 'version'].includes(process.argv[2]) ||
  argsBeforeEnd.some((arg) => ['--help', '-h', '--version', '-v'].includes(arg));
const heapCap =
  Object.hasOwn(HEAP_CAP_MB, process.argv[2]) && !onlyAsking ? HEAP_CAP_MB[process.argv[2]] : undefined;
if (heapCap && !heapCapped) {
  const child = spawn(
    process.execPath,
    [`${HEAP_FLAG}=${heapCap}`, ...process.execArgv, ...process.argv.slice(1)],
    {
      stdio: 'inherit',
    },
  );
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  return;
}
const root = path.resolve(__dirname, '..');
const compiled = path.join(root, 'dist', 'src', 'cli', 'main.js');

let entry;
if (process.env.NODE_ENV === 'production' && fs.existsSync(compiled)) {
  entry = compiled;
} else {
  if (!(onlyAsking && registerPlainTypeScript())) {
    require('ts-node').register({ transpileOnly: true, project: path.join(root, 'tsconfig.json') });
  }
  entry = path.join(root, 'src', 'cli', 'main.ts');
}
require(entry)
  .runCli(process.argv.slice(2))
  .then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`gpucap: ${error && error.message ? error.message : error}\n`);
      process.exit(1);
    },
  );

/**
 * Help and the version come from src/cli/main.ts and src/cli/command-line.ts alone, which use no
 * decorators: esbuild strips their types in milliseconds, where loading the TypeScript compiler for
 * ts-node takes most of a second. Anything that needs decorator metadata (the app) goes through ts-node.
 */
function registerPlainTypeScript() {
  let transformSync;
  try {
    ({ transformSync } = require('esbuild'));
  } catch {
    return false;
  }
  require.extensions['.ts'] = (module, filename) => {
    const { code } = transformSync(fs.readFileSync(filename, 'utf8'), {
      loader: 'ts',
      format: 'cjs',
      target: 'es2022',
      sourcefile: filename,
    });
    module._compile(code, filename);
  };
  return true;
}
