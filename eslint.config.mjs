import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

const TENANT_DATA_ACCESS =
  'Run tenant queries through ScopedDatabase with a ScopedStatement built from the AuthScope.';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bin/**', 'coverage/**', '*.config.*'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  prettier,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-extraneous-class': 'off',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Database access is refused everywhere in src/ except the writers and the infrastructure listed
    // in `ignores`: a new folder reads tenant data only through ScopedDatabase (docs/architecture.md,
    // "Scope by construction"), so it cannot forget the scope.
    files: ['src/**/*.ts'],
    ignores: [
      'src/database/**',
      'src/common/database/**',
      'src/common/auth/**',
      'src/server/observability/**',
      'src/server/read-routing/**',
      'src/server/database-ready.guard.ts',
      'src/import/**',
      'src/ingest/*.ts',
      'src/demo/**',
      'src/cli/**',
      'src/app.module.ts',
      'src/app.factory.ts',
      'src/rollups/**/*-spec.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'typeorm',
              importNames: ['DataSource', 'EntityManager', 'QueryRunner', 'Repository', 'getRepository'],
              message: TENANT_DATA_ACCESS,
            },
            { name: '@nestjs/typeorm', message: TENANT_DATA_ACCESS },
            { name: 'pg', message: TENANT_DATA_ACCESS },
            { name: 'pg-copy-streams', message: TENANT_DATA_ACCESS },
          ],
        },
      ],
    },
  },
);
