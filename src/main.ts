import { runCli } from './cli/main';

/** `node dist/src/main.js` is `gpucap serve`, for container images. */
void runCli(['serve', ...process.argv.slice(2)]).then((code) => process.exit(code));
