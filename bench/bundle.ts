/**
 * Section 8: what a Lambda that imports the SDK pays: the minified esbuild bundle of a
 * handler importing `createLeader`, `withLease` and `sigv4Signer`, counting every file it may load
 * (static and dynamic imports: the build splits, and every output chunk is counted), and the time to
 * import it in a fresh Node process (median of several runs).
 *
 *   npm run bench:bundle            this section alone: updates its part of BENCHMARKS.md and
 *                                   writes bench/results/bundle.json (under a minute)
 *   npm run bench -- --only bundle  the same inside the whole bench's report
 *
 * The build is the issue's `esbuild --bundle --minify --platform=node --format=esm --target=node20`
 * (plus `--splitting`, which esm allows, so that dynamic imports become countable chunks), through
 * esbuild's JS API, with the SDK's source standing in for the published `leasehold` package.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { machineInfo, type MachineInfo } from './machine.js';
import { REPO_ROOT, importInFreshProcess } from './processes.js';
import { median } from './stats.js';

export const BUNDLE_TARGETS = { maxKiB: 100, maxImportMs: 30 } as const;

export interface BundleRow {
  variant: string;
  /** The entry point the handler imports from. */
  entry: 'leasehold' | 'leasehold/lambda';
  watch: boolean;
  /** Every output file: the handler chunk and each chunk it may import (statically or dynamically). */
  totalBytes: number;
  /** What importing the handler loads: the handler chunk and its static imports, transitively. */
  staticBytes: number;
  chunks: number;
  dynamicChunks: number;
  /** Median time of `await import(handler)` in a fresh `node` process. */
  importMsMedian: number;
  importMs: number[];
}

export interface BundleResult {
  measuredAt: string;
  command: string;
  esbuild: string;
  runs: number;
  rows: BundleRow[];
  /** The machine and its load when measured (older results lack it: the report then reads this machine). */
  machine?: MachineInfo;
}

/** The handler: a scheduled job with `withLease`, a one-invocation leader, and a signed client. */
function handlerSource(entry: BundleRow['entry'], watch: boolean): string {
  return `import { LeaseClient, createLeader, sigv4Signer, withLease } from '${entry}';
const endpoint = 'https://abc123.execute-api.eu-west-1.amazonaws.com/prod';
const client = new LeaseClient({ endpoint, signer: sigv4Signer() });
export async function handler(event, context) {
  const leader = createLeader(client, { name: 'nightly', holder: context.awsRequestId, lambdaContext: context${watch ? ", watch: 'wss://abc123.execute-api.eu-west-1.amazonaws.com/prod'" : ''} });
  const result = await withLease(client, 'nightly-job', { holder: context.awsRequestId, lambdaContext: context }, async ({ token }) => token);
  await leader.stop();
  return result;
}
`;
}

/** Resolves `leasehold` and `leasehold/<sub>` to the SDK's source. */
function sdkSource(): Plugin {
  return {
    name: 'leasehold-source',
    setup(b) {
      b.onResolve({ filter: /^leasehold(\/[a-z]+)?$/ }, (args) => ({
        path: join(REPO_ROOT, 'client/src', args.path.slice('leasehold'.length), 'index.ts'),
      }));
    },
  };
}

async function importOnce(url: string): Promise<number> {
  return (await importInFreshProcess(url, { AWS_REGION: 'eu-west-1' })).importMs;
}

export interface BuiltHandler {
  /** The handler chunk, relative to the working directory (esbuild's metafile paths). */
  entryOut: string;
  /** Output chunks (.js) with their sizes, static imports and the input files they contain. */
  chunks: Record<string, { bytes: number; staticImports: string[]; inputs: string[] }>;
}

/** Builds the handler in `dir` with the esbuild options (plus splitting); nothing is run. */
export async function buildHandler(dir: string, variant: string, entry: BundleRow['entry'], watch: boolean): Promise<BuiltHandler> {
  const srcDir = join(dir, `${variant.replace(/\W+/g, '-')}`);
  mkdirSync(srcDir, { recursive: true });
  const source = join(srcDir, 'handler.mjs');
  writeFileSync(source, handlerSource(entry, watch));
  const outdir = join(srcDir, 'out');
  const result = await build({
    entryPoints: [source],
    outdir,
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    splitting: true,
    metafile: true,
    logLevel: 'error',
    plugins: [sdkSource()],
  });
  const outputs = result.metafile.outputs;
  const chunks: BuiltHandler['chunks'] = {};
  for (const [file, out] of Object.entries(outputs)) {
    if (!file.endsWith('.js')) continue;
    chunks[file] = {
      bytes: out.bytes,
      staticImports: out.imports.filter((i) => i.kind === 'import-statement' && outputs[i.path] !== undefined).map((i) => i.path),
      inputs: Object.keys(out.inputs),
    };
  }
  const entryOut = Object.keys(chunks).find((f) => outputs[f]?.entryPoint !== undefined);
  if (entryOut === undefined) throw new Error(`no entry chunk for ${variant}`);
  return { entryOut, chunks };
}

async function measureVariant(dir: string, variant: string, entry: BundleRow['entry'], watch: boolean, runs: number): Promise<BundleRow> {
  const { entryOut, chunks } = await buildHandler(dir, variant, entry, watch);
  const js = Object.keys(chunks);
  const loaded = new Set<string>();
  const visit = (file: string) => {
    if (loaded.has(file)) return;
    loaded.add(file);
    for (const next of chunks[file]?.staticImports ?? []) visit(next);
  };
  visit(entryOut);
  const importMs: number[] = [];
  const url = pathToFileURL(join(REPO_ROOT, entryOut)).href;
  for (let i = 0; i < runs; i++) importMs.push(await importOnce(url));
  return {
    variant,
    entry,
    watch,
    totalBytes: js.reduce((sum, f) => sum + (chunks[f]?.bytes ?? 0), 0),
    staticBytes: [...loaded].reduce((sum, f) => sum + (chunks[f]?.bytes ?? 0), 0),
    chunks: js.length,
    dynamicChunks: js.length - loaded.size,
    importMsMedian: median(importMs),
    importMs,
  };
}

export async function measureBundle(options: { runs: number; log: (line: string) => void; command: string }): Promise<BundleResult> {
  // Everything is bundled (only Node built-ins stay imports), so the bundles run from anywhere.
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-bundle-'));
  const machine = machineInfo();
  const esbuildVersion = (JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules/esbuild/package.json'), 'utf8')) as { version: string }).version;
  try {
    const rows: BundleRow[] = [];
    for (const [variant, entry, watch] of [
      ['leasehold/lambda, with the watch', 'leasehold/lambda', true],
      ['leasehold/lambda, without the watch', 'leasehold/lambda', false],
      ['leasehold (credential provider chain), with the watch', 'leasehold', true],
    ] as const) {
      options.log(`  ${variant}…`);
      rows.push(await measureVariant(dir, variant, entry, watch, options.runs));
    }
    return { measuredAt: new Date().toISOString(), command: options.command, esbuild: esbuildVersion, runs: options.runs, rows, machine };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const kib = (bytes: number) => (bytes / 1024).toFixed(1);
export const BUNDLE_SECTION_START = '<!-- bundle section: npm run bench:bundle rewrites from here -->';
export const BUNDLE_SECTION_END = '<!-- end of bundle section -->';

export function renderBundle(result: BundleResult | undefined, error?: string): string[] {
  const title = '## 8. Lambda bundle: size and import time of the SDK';
  if (result === undefined) return error === undefined ? [] : [BUNDLE_SECTION_START, title, '', `Failed: ${error}`, BUNDLE_SECTION_END];
  const m = result.machine ?? machineInfo();
  return [
    BUNDLE_SECTION_START,
    title,
    '',
    `Measured ${result.measuredAt.slice(0, 10)} by \`${result.command}\` on ${m.cores} cores (${m.cpuModel}), Node ${m.node}, esbuild ${result.esbuild}; ` +
      `1-minute load average ${m.loadAverageAtStart.toFixed(2)}.`,
    'A handler importing `LeaseClient`, `createLeader`, `withLease` and `sigv4Signer`, built with ' +
      '`esbuild --bundle --minify --platform=node --format=esm --target=node20 --splitting`. **All chunks** counts every output ' +
      'file, dynamic imports included; **loaded at import** only the handler chunk and its static imports. SigV4 is `aws4fetch`\'s ' +
      '(bundled). The watch opens the runtime\'s global WebSocket (Lambda\'s Node 22+ runtimes) or, where there is none, `ws`, ' +
      'which the SDK imports at run time and no bundle contains. Import time: `await import(handler)` in a fresh `node` ' +
      `process, median of ${result.runs} runs (environment credentials, nothing contacted).`,
    '',
    '| handler imports from | all chunks KiB | chunks (dynamic) | loaded at import KiB | import ms (median) | ≤ 100 KiB all chunks | ≤ 30 ms |',
    '|---|---:|---:|---:|---:|---|---|',
    ...result.rows.map(
      (r) =>
        `| ${r.variant} | ${kib(r.totalBytes)} | ${r.chunks} (${r.dynamicChunks}) | ${kib(r.staticBytes)} | ${r.importMsMedian.toFixed(1)} | ` +
        `${r.totalBytes <= BUNDLE_TARGETS.maxKiB * 1024 ? 'yes' : '**no**'} | ${r.importMsMedian <= BUNDLE_TARGETS.maxImportMs ? 'yes' : '**no**'} |`,
    ),
    BUNDLE_SECTION_END,
  ];
}

/** Replaces the bundle section of a report (or appends it): the standalone run keeps the rest of BENCHMARKS.md. */
export function spliceBundleSection(markdown: string, section: string[]): string {
  const start = markdown.indexOf(BUNDLE_SECTION_START);
  const end = markdown.indexOf(BUNDLE_SECTION_END);
  const text = section.join('\n');
  if (start >= 0 && end > start) return `${markdown.slice(0, start)}${text}${markdown.slice(end + BUNDLE_SECTION_END.length)}`;
  return `${markdown.trimEnd()}\n\n${text}\n`;
}

async function main(): Promise<void> {
  const runs = Number(process.env.BENCH_BUNDLE_RUNS ?? 11);
  const command = 'npm run bench:bundle';
  const log = (line: string) => process.stderr.write(`${line}\n`);
  log('▶ 8. Lambda bundle');
  const result = await measureBundle({ runs, log, command });
  const section = renderBundle(result);
  process.stdout.write(`${section.join('\n')}\n`);
  const reportPath = join(REPO_ROOT, 'BENCHMARKS.md');
  writeFileSync(reportPath, spliceBundleSection(readFileSync(reportPath, 'utf8'), section));
  const jsonPath = join(REPO_ROOT, 'bench/results/bundle.json');
  writeFileSync(jsonPath, `${JSON.stringify(result, null, 2)}\n`);
  log(`wrote ${relative(process.cwd(), reportPath)} (its bundle section) and ${relative(process.cwd(), jsonPath)}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(`bench:bundle: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  });
}
