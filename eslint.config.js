// @ts-check
/**
 * Typed linting (`npm run lint`, part of `npm test`): typescript-eslint's recommended
 * type-checked set, with promise handling enforced everywhere. Left out, with the reason:
 * - `require-await`: Fastify plugins are `async` by contract even when they await nothing;
 * - `no-unnecessary-type-assertion`: harmless, and removing ~180 of them is churn for its own sake;
 * - in test/ and bench/ the `no-unsafe-*` family and `no-explicit-any`: they read untyped JSON
 *   answers on purpose, and assert on them.
 */
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'web/**', 'eslint.config.js', '.dependency-cruiser.cjs', 'scripts/**/*.mjs', 'test/fixtures/**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', {
        // node:test's test()/describe() return promises that the runner itself awaits.
        allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] }],
      }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // prom-client's collect() binds `this` to the metric, so the owner is reached as `self`.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['self'] }],
    },
  },
  {
    // Front doors receive services (src/broker/services.ts); the import rules keep the engine and
    // store modules out, and this keeps their objects out (`broker.engine.…`, `broker.store.…`).
    files: ['src/http/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', {
        selector: "MemberExpression[property.name=/^(engine|store)$/]",
        message: 'Front doors call broker services, never the engine or the store: add a service method (docs/architecture.md#layers).',
      }],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
