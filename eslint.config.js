// ESLint flat config: @eslint/js and typescript-eslint recommended rules for the whole
// repository (src, test, bench, bin, web/src and config files); build output and local
// state are ignored. Type-aware rules are left to `make typecheck` to keep lint fast.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

// Plain .js files have no TypeScript to catch undefined names; declare the runtime globals
// they may use (the `globals` package is not a dependency).
const nodeGlobals = Object.fromEntries(
  [
    'process', 'console', 'Buffer', 'URL', 'URLSearchParams', 'AbortController', 'AbortSignal',
    'TextEncoder', 'TextDecoder', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval',
    'setImmediate', 'clearImmediate', 'queueMicrotask', 'structuredClone', 'fetch', 'performance',
    'globalThis',
  ].map((name) => [name, 'readonly']),
);

export default defineConfig(
  {
    ignores: [
      'dist/**', 'web/dist/**', 'node_modules/**', '.local/**', '.tap/**', 'coverage/**',
      'test-artifacts/**', 'bench/results/**',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: nodeGlobals },
  },
  {
    rules: {
      // `_name` marks a deliberately unused binding (callback arity, destructuring rest).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
    },
  },
);
