import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// Three projects, so a change gets feedback in seconds and the whole suite still runs as one:
//   unit         no I/O beyond reading files: no DynamoDB Local, no child process, no socket (a setup
//                file refuses them), so `npm run test:unit` starts no Java at all.
//   integration  DynamoDB Local, PostgreSQL, real HTTP and processes, in-process CDK synthesis.
//   slow         the long runs: chaos runs, synthesis with bundling, Chromium, packing the SDK,
//                real-time CLI runs, whole-program tsc builds.
// Folders name the subject (unit/, integration/, bench/, chaos/, cli/, infra/); the lists below
// name the files whose kind differs from their folder's. A new file in test/unit/, test/bench/ or
// test/chaos/ is a unit test unless it is listed here.

/** Files that take minutes, or real time measured in seconds, each for the reason given. */
const SLOW = [
  'test/chaos/harness-run.test.ts', // bounded chaos runs of real processes
  'test/chaos/rw-run.test.ts', // bounded chaos runs of the rwlock mode (--rw), real processes
  'test/infra/synthesized-app.test.ts', // `cdk synth` through the CLI, bundling every function
  'test/bench/bundle.test.ts', // esbuild bundles of the SDK
  'test/cli/page.test.ts', // the lease page in headless Chromium
  'test/cli/run.test.ts', // `leasehold run` in real time (3 s leases)
  'test/cli/rwlock-run.test.ts', // `leasehold run --shared/--exclusive` in real time (6 s to 60 s grants)
  'test/cli/sidecar.test.ts', // `leasehold sidecar` in real time (3 s leases)
  'test/cli/parent-gone.test.ts', // `npx leasehold run` and `sidecar` outliving a killed npm, in real time (3 s leases)
  'test/integration/client-pack.test.ts', // packs the SDK and installs it in a project
  'test/unit/client-build.test.ts', // three whole-program tsc builds
];

/** Files in unit folders that write files, start processes, open sockets or need DynamoDB Local. */
const INTEGRATION_IN_UNIT_FOLDERS = [
  'test/bench/lock-client.test.ts', // DynamoDB Local
  'test/bench/raw-dynamodb.test.ts', // DynamoDB Local
  'test/chaos/harness-jobs.test.ts', // DynamoDB Local
  'test/chaos/harness-database.test.ts', // DynamoDB Local of its own, stopped and started
  'test/chaos/proxy.test.ts', // real sockets through the fault proxy
  'test/chaos/checker-cli.test.ts', // the checker as a process
  'test/chaos/checker-groups.test.ts', // the checker as a process, once
  'test/chaos/harness-journal.test.ts', // writes journal files
  'test/chaos/harness-recording.test.ts', // writes journal files
  'test/chaos/history.test.ts', // writes history files
];

/** Pure functions in a folder of integration tests. */
const UNIT_IN_INTEGRATION_FOLDERS = ['test/cli/page-semaphores.test.ts', 'test/cli/page-rwlocks.test.ts'];

const DYNAMODB_LOCAL = ['test/support/global-setup.ts'];

export default defineConfig({
  resolve: {
    alias: [
      // README examples and tests import the SDK by its published name.
      { find: /^leasehold$/, replacement: fileURLToPath(new URL('./client/src/index.ts', import.meta.url)) },
      { find: /^leasehold\/(.*)$/, replacement: fileURLToPath(new URL('./client/src/$1/index.ts', import.meta.url)) },
    ],
  },
  test: {
    // .ci/run asks for a JSON report so it can print one plain "N passed, M failed" line.
    reporters: process.env.LEASEHOLD_VITEST_JSON
      ? ['default', ['json', { outputFile: process.env.LEASEHOLD_VITEST_JSON }]]
      : ['default'],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: keep DynamoDB Local and the workers from starving each other.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/bench/**/*.test.ts', 'test/chaos/**/*.test.ts', ...UNIT_IN_INTEGRATION_FOLDERS],
          exclude: [...configDefaults.exclude, ...SLOW, ...INTEGRATION_IN_UNIT_FOLDERS],
          setupFiles: ['test/support/unit-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/infra/**/*.test.ts', 'test/cli/**/*.test.ts', ...INTEGRATION_IN_UNIT_FOLDERS],
          exclude: [...configDefaults.exclude, ...SLOW, ...UNIT_IN_INTEGRATION_FOLDERS],
          globalSetup: DYNAMODB_LOCAL,
        },
      },
      {
        extends: true,
        test: { name: 'slow', include: SLOW, globalSetup: DYNAMODB_LOCAL },
      },
    ],
  },
});
