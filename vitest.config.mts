import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

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
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: keep DynamoDB Local and the workers from starving each other.
    maxWorkers: 2,
  },
});
