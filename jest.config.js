/** Unit tests are pure logic; e2e tests share one database prepared once by the global setup. */
const tsJest = ['ts-jest', { isolatedModules: true, diagnostics: false }];
module.exports = {
  testTimeout: 60000,
  // Locally a leaked handle keeps jest open so it gets noticed; in CI it must never hang the run.
  forceExit: process.env.CI === 'true',
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      roots: ['<rootDir>/test/unit'],
      testRegex: '\\.spec\\.ts$',
      transform: { '^.+\\.ts$': tsJest },
      setupFiles: ['reflect-metadata'],
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      // Each rollup's recomputation test lives in its folder, beside the definitions it checks.
      roots: ['<rootDir>/test/e2e', '<rootDir>/src/rollups'],
      testRegex: '\\.e2e-spec\\.ts$',
      transform: { '^.+\\.ts$': tsJest },
      setupFiles: ['reflect-metadata'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
