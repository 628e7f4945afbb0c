#!/usr/bin/env node
'use strict';
// In a checkout the CLI runs from the TypeScript sources (transpile only, no build step);
// a production image runs the compiled output (NODE_ENV=production, after `npm run build`).
const path = require('node:path');
const fs = require('node:fs');
const root = path.resolve(__dirname, '..');
const compiled = path.join(root, 'dist', 'src', 'cli', 'main.js');

let entry;
if (process.env.NODE_ENV === 'production' && fs.existsSync(compiled)) {
  entry = compiled;
} else {
  require('ts-node').register({ transpileOnly: true, project: path.join(root, 'tsconfig.json') });
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
