// `make mutate`: mutation testing (StrykerJS) of the pure rules — src/hot/domain, the sandbox
// key format and the admin list's paging — against the unit tests only (test/unit: no
// servers, no I/O). Stryker copies the tree into .stryker-tmp/, instruments the sources
// (every mutant in, switched by an environment variable), compiles them with tsc
// (tsconfig.stryker.json: src and test/unit only), then runs each compiled unit test file
// with node under the tap runner's hook. One test process at a time: the machine is shared.
// Why it runs this way: docs/decisions/mutation-testing.md; the scores: docs/mutation.md.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  plugins: ['@stryker-mutator/tap-runner'],
  testRunner: 'tap',
  tap: {
    // the unit tests of the mutated modules (others import the web build or spawn processes);
    // schemas.ts and rate-window.ts have tests but no mutants (Stryker does not mutate inside
    // `as const`, which holds all of their data)
    testFiles: [
      'dist/test/unit/{canonical,client-address,endpoint,errors,paging,sandbox-keys,tokens,validation}.test.js',
      'dist/test/unit/{canonical-exact,dimensions,rate-window,response-schemas,schemas}.test.js',
      'dist/test/unit/{digest,domain-keys,service}.test.js',
      'dist/test/unit/{expiry-patch,health-patch}.test.js',
    ],
    nodeArgs: ['-r', '{{hookFile}}', '{{testFile}}'],
  },
  buildCommand: 'npx tsc -p tsconfig.stryker.json',
  mutate: ['src/hot/domain/**/*.ts', 'src/hot/sandboxes/keys.ts', 'src/admin/paging.ts'],
  // each test file records which mutants it reaches: a mutant runs only the files that reach it
  coverageAnalysis: 'perTest',
  concurrency: 1,
  timeoutMS: 10000,
  // nothing the unit tests need: copying .local (the databases) or web/ would cost minutes
  // (docs/ stays: errors.test.ts checks docs/errors.md against the registry)
  ignorePatterns: [
    'dist', '.local', 'web', 'bench', 'deploy', 'test-artifacts', '.tap', 'reports', 'client',
    'test/http', 'test/pg', 'test/redis', 'test/proxy', 'test/web', 'test/bench', 'test/client',
  ],
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  // below 90 % `make mutate` fails
  thresholds: { high: 95, low: 90, break: 90 },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
};
