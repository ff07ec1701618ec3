import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { ENV } from '../functions/config.js';
import { REPO_ROOT, importInFreshProcess } from './processes.js';
import { median } from './stats.js';

/**
 * Section 5: each Lambda bundle's size, and the time to import it in a fresh Node process.
 *
 * The bundles are built with the esbuild options of the CDK construct (infra/lease-service.ts,
 * `createFunction`): ESM, target node22, mainFields module/main, the createRequire banner,
 * minified, source map without sources content, every package bundled (externalModules: []).
 * Each import runs with a Lambda-like environment (AWS_LAMBDA_FUNCTION_NAME set, so the handler
 * builds its clients at import as in Lambda's init phase; NODE_OPTIONS=--enable-source-maps as
 * deployed) and with endpoints on 127.0.0.1 — nothing is contacted at import.
 */

const ESM_REQUIRE_BANNER = "import { createRequire } from 'module'; const require = createRequire(import.meta.url);";

export interface ColdStartRow {
  fn: string;
  bytes: number;
  mapBytes: number;
  /** Median time of `await import(bundle)` inside a fresh process. */
  importMsMedian: number;
  /** The same without NODE_OPTIONS=--enable-source-maps. */
  importMsMedianNoSourceMaps: number;
  /** Median time from spawning `node` to its exit (process start + import + exit), as deployed. */
  processMsMedian: number;
  runs: number;
}

function runOnce(bundleUrl: string, sourceMaps: boolean): Promise<{ importMs: number; processMs: number }> {
  return importInFreshProcess(bundleUrl, {
    ...(sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {}),
    AWS_LAMBDA_FUNCTION_NAME: 'leasehold-bench-cold-start',
    [ENV.region]: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    [ENV.leaseTable]: 'leasehold-bench',
    [ENV.dynamodbEndpoint]: 'http://127.0.0.1:9',
    [ENV.subscriptionTable]: 'leasehold-bench-subscriptions',
    [ENV.managementEndpoint]: 'http://127.0.0.1:9',
    POWERTOOLS_METRICS_DISABLED: 'true',
    [ENV.logLevel]: 'WARN',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  });
}

export async function measureColdStart(options: { runs: number; log: (line: string) => void }): Promise<ColdStartRow[]> {
  const handlersDir = join(REPO_ROOT, 'functions', 'handlers');
  const ids = readdirSync(handlersDir)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.slice(0, -3))
    .sort();
  const outDir = mkdtempSync(join(tmpdir(), 'leasehold-bench-bundles-'));
  const rows: ColdStartRow[] = [];
  try {
    for (const id of ids) {
      const outfile = join(outDir, id, 'index.mjs');
      await build({
        entryPoints: [join(handlersDir, `${id}.ts`)],
        outfile,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node22',
        mainFields: ['module', 'main'],
        banner: { js: ESM_REQUIRE_BANNER },
        minify: true,
        sourcemap: true,
        sourcesContent: false,
        logLevel: 'error',
      });
      const url = pathToFileURL(outfile).href;
      const imports: number[] = [];
      const importsNoMaps: number[] = [];
      const processes: number[] = [];
      for (let i = 0; i < options.runs; i++) {
        const r = await runOnce(url, true);
        imports.push(r.importMs);
        processes.push(r.processMs);
        importsNoMaps.push((await runOnce(url, false)).importMs);
      }
      rows.push({
        fn: id,
        bytes: statSync(outfile).size,
        mapBytes: statSync(`${outfile}.map`).size,
        importMsMedian: median(imports),
        importMsMedianNoSourceMaps: median(importsNoMaps),
        processMsMedian: median(processes),
        runs: options.runs,
      });
    }
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
  return rows;
}
