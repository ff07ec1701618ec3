import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

// The client builds on its own (`tsc -p client/tsconfig.build.json`), the build runs under plain
// Node, and the examples the docs show compile and are exactly the files in examples/.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLES = readdirSync(join(ROOT, 'examples'))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => `examples/${f}`);

function diagnosticsText(diagnostics: readonly ts.Diagnostic[]): string[] {
  return diagnostics.map((d) => {
    const where = d.file && d.start !== undefined ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: ` : '';
    return `${where}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

function parseConfig(path: string, overrides: ts.CompilerOptions = {}): ts.ParsedCommandLine {
  const parsed = ts.getParsedCommandLineOfConfigFile(path, overrides, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(diagnosticsText([d]).join('\n'));
    },
  });
  if (parsed === undefined) throw new Error(`cannot read ${path}`);
  return parsed;
}

// Built inside node_modules so the output's bare imports resolve as they would for an installed package.
const cacheDir = join(ROOT, 'node_modules', '.cache');
mkdirSync(cacheDir, { recursive: true });
const outDir = mkdtempSync(join(cacheDir, 'leasehold-client-build-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

describe('the client build', () => {
  // Whole-program compiles take tens of seconds on a busy 2-core machine; the long timeouts below are not timing claims.
  it('compiles client/tsconfig.build.json with declarations and no errors', () => {
    const config = parseConfig(join(ROOT, 'client/tsconfig.build.json'), { outDir });
    const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
    const emitted = program.emit();
    expect(diagnosticsText([...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics])).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(ROOT, 'client/package.json'), 'utf8')) as {
      exports: Record<string, string | { types: string; import: string }>;
    };
    for (const target of Object.values(manifest.exports)) {
      if (typeof target === 'string') continue;
      expect(existsSync(join(outDir, target.import.replace('./dist/', '')))).toBe(true);
      expect(existsSync(join(outDir, target.types.replace('./dist/', '')))).toBe(true);
    }
  }, 180_000);

  it('runs under plain Node: every entry point loads and exports its API', () => {
    const script = `
      const main = await import(${JSON.stringify(pathToFileURL(join(outDir, 'index.js')).href)});
      const dynamodb = await import(${JSON.stringify(pathToFileURL(join(outDir, 'dynamodb/index.js')).href)});
      const postgres = await import(${JSON.stringify(pathToFileURL(join(outDir, 'postgres/index.js')).href)});
      const protocol = await import(${JSON.stringify(pathToFileURL(join(outDir, 'protocol/index.js')).href)});
      console.log(JSON.stringify({
        main: ['LeaseClient', 'createLeader', 'withLease', 'createWatch', 'sigv4Signer', 'LeaderMetrics', 'LeaseLostError'].filter((k) => typeof main[k] !== 'function'),
        dynamodb: ['fencePut', 'fenceUpdate', 'fenceDelete', 'isFencedOut', 'dynamodbEpoch'].filter((k) => typeof dynamodb[k] !== 'function'),
        postgres: ['createEpochTable', 'postgresEpoch', 'staleTokenPredicate', 'isFencedOutError'].filter((k) => typeof postgres[k] !== 'function'),
        protocol: ['errorFromBody', 'validateName'].filter((k) => typeof protocol[k] !== 'function'),
      }));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ main: [], dynamodb: [], postgres: [], protocol: [] });
  }, 180_000);
});

describe('the examples in the docs', () => {
  it('compile against the SDK as published names (leasehold, leasehold/dynamodb, leasehold/postgres)', () => {
    const config = parseConfig(join(ROOT, 'tsconfig.json'));
    const program = ts.createProgram({ rootNames: EXAMPLES.map((f) => join(ROOT, f)), options: config.options });
    expect(diagnosticsText(ts.getPreEmitDiagnostics(program))).toEqual([]);
  }, 180_000);

  it('are twelve: a cron leader on ECS, a scheduled Lambda job with withLease and its CDK stack, a fenced DynamoDB write, a leader against the local server, epoch-fenced DynamoDB and PostgreSQL jobs, a semaphore, a shared/exclusive lease and its epoch-fenced writes, and partitioned queue consumers (lease groups)', () => {
    expect(EXAMPLES.sort()).toEqual([
      'examples/ecs-cron-leader.ts',
      'examples/epoch-fenced-dynamodb-job.ts',
      'examples/epoch-fenced-postgres-job.ts',
      'examples/fenced-dynamodb-write.ts',
      'examples/lambda-nightly-job-stack.ts',
      'examples/lambda-nightly-job.ts',
      'examples/local-leader.ts',
      'examples/partitioned-epoch-consumer.ts',
      'examples/partitioned-queue-consumer.ts',
      'examples/rwlock-fenced-postgres.ts',
      'examples/rwlock-report.ts',
      'examples/semaphore-backfill.ts',
    ]);
  });

  it('appear in the docs exactly as the compiled files', () => {
    const docs = ['README.md', 'client/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const shown = new Map<string, string>();
    for (const doc of docs) {
      const text = readFileSync(join(ROOT, doc), 'utf8');
      for (const match of text.matchAll(/<!-- example: (examples\/[\w.-]+\.ts) -->\s*```ts\n([\s\S]*?)```/g)) {
        const [, file, code] = match as unknown as [string, string, string];
        expect(code, `${doc} shows ${file}`).toBe(readFileSync(join(ROOT, file), 'utf8'));
        shown.set(file, doc);
      }
    }
    expect([...shown.keys()].sort()).toEqual([...EXAMPLES].sort());
  });
});
