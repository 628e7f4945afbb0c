import { runCli } from '../../../src/cli/main';

describe('runCli', () => {
  let stderr: jest.SpyInstance;

  beforeEach(() => {
    stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  });

  afterEach(() => {
    stderr.mockRestore();
  });

  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty', 'nope'])(
    'answers %s as an unknown command (exit 2, usage)',
    async (name) => {
      await expect(runCli([name])).resolves.toBe(2);
      const written = stderr.mock.calls.map(([text]) => String(text)).join('');
      expect(written).toContain(`Unknown command '${name}'`);
      expect(written).toContain('gpucap <command>');
    },
  );
});
