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

// The rooms of src/hot (README, "Layout"). Infrastructure (domain/, http/, redis/, pg/,
// metrics/ and the configuration modules) knows no feature. A feature imports infrastructure,
// and another feature only through that feature's entry module (<feature>/index.ts) and only
// when that feature sits below it in FEATURES. The roots (app.ts, server.ts, compose.ts,
// migrate.ts, main.ts) and src/admin use the features through their entry modules too; no
// feature imports a root or src/admin. Cycles (type-only ones too) are checked by
// scripts/import-cycles.mjs, which `make lint` runs after eslint.
/** the features, lowest first: each may use the ones before it */
const FEATURES = ['ratelimit', 'sandboxes', 'registry', 'liveness', 'writes', 'reindex', 'fallback', 'held', 'search', 'changes', 'readiness', 'openapi', 'discovery'];
const INFRA = ['domain', 'http', 'redis', 'pg', 'metrics'];
const ROOT_FILES = ['**/app.js', '**/server.js', '**/compose.js', '**/migrate.js', '**/main.js'];
const NO_ADMIN = { group: ['**/admin/**'], message: 'only the composition root (src/hot/compose.ts) imports src/admin' };
const NO_ROOTS = { group: ROOT_FILES, message: 'the roots (app, server, compose, migrate, main) import the rooms, never the other way round' };
const NO_FEATURES = { group: FEATURES.map((f) => `**/${f}/**`), message: 'infrastructure (domain, http, redis, pg, metrics, config) knows no feature' };
/** from outside a feature: its entry module only */
const entryOnly = (f) => ({ group: [`**/${f}/**`, `!**/${f}/index.js`], message: `use the ${f} room through its entry module (${f}/index.ts)` });
const above = (f) => ({ group: FEATURES.slice(FEATURES.indexOf(f) + 1).map((g) => `**/${g}/**`), message: `${f}/ sits below ${FEATURES.slice(FEATURES.indexOf(f) + 1).join(', ')} (eslint.config.js FEATURES)` });
const featureBlocks = FEATURES.map((f) => ({
  files: [`src/hot/${f}/**/*.ts`],
  rules: { 'no-restricted-imports': ['error', { patterns: [NO_ADMIN, NO_ROOTS, ...(FEATURES.indexOf(f) < FEATURES.length - 1 ? [above(f)] : []), ...FEATURES.slice(0, FEATURES.indexOf(f)).map(entryOnly)] }] },
}));
const infraBlocks = [
  { files: INFRA.map((d) => `src/hot/${d}/**/*.ts`).concat(['src/hot/config.ts', 'src/hot/config-env.ts', 'src/hot/config-settings.ts', 'src/hot/paths.ts']), rules: { 'no-restricted-imports': ['error', { patterns: [NO_ADMIN, NO_ROOTS, NO_FEATURES] }] } },
  // domain/ is pure: nothing else of the project (after the block above: the later one wins)
  { files: ['src/hot/domain/**/*.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['../*.js', '../../**', ...INFRA.filter((d) => d !== 'domain').map((d) => `../${d}/**`), ...FEATURES.map((d) => `../${d}/**`)], message: 'domain/ is pure: it imports nothing else of the project' }] }] } },
];
const rootBlocks = [
  { files: ['src/hot/*.ts', 'src/admin/**/*.ts'], ignores: ['src/hot/config.ts', 'src/hot/config-env.ts', 'src/hot/config-settings.ts', 'src/hot/paths.ts'], rules: { 'no-restricted-imports': ['error', { patterns: FEATURES.map(entryOnly) }] } },
];
const layerBlocks = [...featureBlocks, ...infraBlocks, ...rootBlocks];

export default defineConfig(
  {
    ignores: [
      'dist/**', 'web/dist/**', 'node_modules/**', '.local/**', '.tap/**', 'coverage/**',
      'test-artifacts/**', 'bench/results/**',
      // the client's build products (client/scripts/gen-types.mjs, tsc) and Stryker's sandboxes
      'client/dist/**', 'client/src/generated/**', '.stryker-tmp/**', 'reports/**',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: nodeGlobals },
  },
  ...layerBlocks,
  {
    rules: {
      // `_name` marks a deliberately unused binding (callback arity, destructuring rest).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
      // STYLE: "split a file well before it passes ~300 lines" (comments and blank lines count:
      // a file is read whole). Generated files are ignored above.
      'max-lines': ['error', { max: 300, skipBlankLines: false, skipComments: false }],
    },
  },
);
