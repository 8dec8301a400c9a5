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

// The layering of src/hot (docs/decisions/layers.md): domain <- store / index / redis
// <- sandbox, cache <- routes <- server <- compose.ts (the composition root) <- main.ts.
// Imports point down only; nothing in src/hot reaches into src/admin except compose.ts,
// which hands the admin routes to the server. Cycles (type-only ones too) are checked by
// scripts/import-cycles.mjs, which `make lint` runs after eslint.
/** the folders of src/hot other than domain/ */
const OTHER_FOLDERS = ['store', 'index', 'redis', 'sandbox', 'cache', 'changes', 'http', 'ops', 'routes', 'liveness'];
const NO_ADMIN = { group: ['**/admin/**'], message: 'only the composition root (src/hot/compose.ts) imports src/admin' };
const NO_ROOTS = { group: ['**/compose.js', '**/main.js'], message: 'the roots import the parts, never the other way round' };
const BELOW_APP = ['**/routes/**', '**/app.js', '**/server.js', '**/http/route.js'];
const LAYERS = {
  domain: [{ group: ['../*.js', '../../**', ...OTHER_FOLDERS.map((d) => `../${d}/**`)], message: 'domain/ is pure: it imports nothing else of the project' }],
  store: [{ group: ['**/sandbox/**', '**/cache/**', '**/index/**', '**/ops/**', '!**/ops/outage.js', '**/http/**', ...BELOW_APP], message: 'store/ sits below index/, sandbox/, cache/ and the routes' }],
  redis: [{ group: ['**/sandbox/**', '**/cache/**', '**/index/**', '**/store/**', '**/ops/**', '!**/ops/outage.js', '**/http/**', ...BELOW_APP], message: 'redis/ sits below index/, sandbox/, cache/ and the routes' }],
  index: [{ group: ['**/sandbox/**', '**/cache/**', '**/ops/**', '!**/ops/outage.js', '**/http/**', ...BELOW_APP], message: 'index/ sits below sandbox/, cache/ and the routes' }],
  liveness: [{ group: ['**/sandbox/**', '**/cache/**', '**/http/**', ...BELOW_APP], message: 'liveness/ (leases, the sweeper) sits below sandbox/, cache/ and the routes' }],
  sandbox: [{ group: ['**/cache/**', '**/changes/**', ...BELOW_APP], message: 'sandbox/ sits below the routes (request types: http/types.ts)' }],
  cache: [{ group: ['**/sandbox/**', '**/changes/**', ...BELOW_APP], message: 'cache/ sits below the routes (request types: http/types.ts)' }],
  http: [{ group: ['**/routes/**', '**/changes/**', '**/app.js', '**/server.js'], message: 'http/ (routing, bodies) sits below the routes' }],
  // ops/outage.ts (the error classifier) sits at the bottom with domain/: see OUTAGE below
  ops: [{ group: ['**/routes/**', '**/changes/**', '**/server.js'], message: 'ops/ sits below the routes' }],
  changes: [{ group: ['**/server.js'], message: 'the change feed sits below the server' }],
  routes: [{ group: ['**/server.js'], message: 'routes sit below the server' }],
};
const OUTAGE = { group: ['../*.js', '../../**', ...OTHER_FOLDERS.map((d) => `../${d}/**`), './*', '!./outage.js'], message: 'ops/outage.ts (the one error classifier) imports only domain/: store/ and redis/ use it' };
const layerBlocks = [
  ...Object.entries(LAYERS).map(([dir, own]) => ({
    files: [`src/hot/${dir}/**/*.ts`],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_ADMIN, NO_ROOTS, ...own] }] },
  })),
  { files: ['src/hot/*.ts'], ignores: ['src/hot/compose.ts', 'src/hot/main.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [NO_ADMIN, NO_ROOTS] }] } },
  // after the ops/ block: for a file two blocks name, the later one's options win
  { files: ['src/hot/ops/outage.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [NO_ADMIN, NO_ROOTS, OUTAGE] }] } },
  { files: ['src/hot/compose.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/main.js'], message: NO_ROOTS.message }] }] } },
];

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
