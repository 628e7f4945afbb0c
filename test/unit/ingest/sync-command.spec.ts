import { PassThrough } from 'node:stream';
import { syncCommand } from '../../../src/cli/commands/sync.command';
import type { CliContext } from '../../../src/cli/cli-context';
import type { AppConfig } from '../../../src/core/config/app-config';
import { UsageError } from '../../../src/cli/usage-error';

// Flags and the config are refused before the database is opened: no database is given here.
const context: CliContext = {
  config: {} as AppConfig,
  stdout: new PassThrough(),
  stderr: new PassThrough(),
  stdin: new PassThrough(),
};
const MISSING = '/nonexistent/gpucap-sync.yaml';

describe('gpucap sync: flags', () => {
  it.each(['0s', '05s', '1.5m', '60', 'm', '1w'])('refuses --every %s, naming the flag', async (every) => {
    const refused = syncCommand(['--config', MISSING, '--every', every], context);
    await expect(refused).rejects.toThrow(UsageError);
    await expect(refused).rejects.toThrow(
      `--every must be a duration such as 60s, 5m or 1h (got '${every}')`,
    );
  });

  it.each(['1s', '60s', '5m', '1h', '1d'])('reads --every %s with the one duration parser', async (every) => {
    // The interval is accepted: the next thing refused is the config file.
    await expect(syncCommand(['--config', MISSING, '--every', every], context)).rejects.toThrow(
      `${MISSING}: cannot read the config file '${MISSING}'`,
    );
  });
});
