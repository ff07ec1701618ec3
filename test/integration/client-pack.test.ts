import { execFile, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/local-server.js';

// What a newcomer does (the README, "Use the SDK from your project"): `npm run sdk:pack` in a
// checkout, then `npm install <tarball>` in a project outside it. The pack runs in a copy of the
// checkout (package.json, tsconfig.json and client/ without dist/), so it proves that packing builds
// the package from nothing and never races another test over client/dist. The outside project gets
// the package's dependencies as links to the ones `npm ci` installed here, so the install runs with
// `--offline` and needs no registry.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const NPM_TIMEOUT_MS = 60_000;

interface ClientManifest {
  name: string;
  version: string;
  bin: Record<string, string>;
  exports: Record<string, string | { types: string; import: string }>;
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'client/package.json'), 'utf8')) as ClientManifest;
const TARBALL = `${manifest.name}-${manifest.version}.tgz`;
const EXAMPLE = readFileSync(join(ROOT, 'examples/local-leader.ts'), 'utf8');

const work = realpathSync(mkdtempSync(join(tmpdir(), 'leasehold-pack-')));
const checkout = join(work, 'checkout');
const project = join(work, 'project');
let entries: string[] = [];
let server: TestServer | undefined;
let compileDiagnostics: string[] = [];

function npm(args: string[], cwd: string): string {
  return execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    encoding: 'utf8',
    timeout: NPM_TIMEOUT_MS,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
}

/** Links node_modules/<name> of `dir` to the copy installed at the repository root. */
function linkInstalled(dir: string, name: string): void {
  const installed = join(ROOT, 'node_modules', name);
  if (!existsSync(installed)) return;
  mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true });
  symlinkSync(installed, join(dir, 'node_modules', name), 'dir');
}

/** Compiles the README's leader example and an import of every subpath as the outside project's own code. */
function compileOutsideProject(): string[] {
  const imports = Object.keys(manifest.exports)
    .filter((key) => key !== './package.json')
    .map((key, i) => `import * as entry${i} from '${key.replace(/^\./, manifest.name)}';\nexport const size${i}: number = Object.keys(entry${i}).length;`);
  writeFileSync(join(project, 'leader.ts'), EXAMPLE);
  writeFileSync(join(project, 'entries.ts'), `${imports.join('\n')}\n`);
  const program = ts.createProgram({
    rootNames: [join(project, 'leader.ts'), join(project, 'entries.ts')],
    options: {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      types: ['node'],
      outDir: join(project, 'out'),
    },
  });
  const emitted = program.emit();
  return [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

beforeAll(() => {
  mkdirSync(join(checkout, 'client'), { recursive: true });
  for (const file of ['package.json', 'tsconfig.json']) cpSync(join(ROOT, file), join(checkout, file));
  for (const entry of ['package.json', 'README.md', 'tsconfig.build.json', 'src']) cpSync(join(ROOT, 'client', entry), join(checkout, 'client', entry), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'), 'dir');
  npm(['run', 'sdk:pack'], checkout);
  entries = execFileSync('tar', ['-tzf', join(checkout, TARBALL)], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((entry) => entry.replace(/^package\//, ''));

  // The outside project: dependencies and optional peers present (as a user would install them),
  // plus the type packages a TypeScript user has.
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'outside', version: '1.0.0', private: true, type: 'module' }));
  for (const name of Object.keys(manifest.dependencies)) linkInstalled(project, name);
  // No scripts: npm treats a linked dependency as a folder to build, and runs its `prepare` (aws4fetch's
  // rebuilds from sources its published package leaves out); an install from the registry runs none.
  npm(['install', '--offline', '--ignore-scripts', join(checkout, TARBALL)], project);
  // After the install, which prunes what the project's package.json does not name.
  const peers = Object.keys(manifest.peerDependencies ?? {});
  for (const name of [...peers, ...peers.map((p) => `@types/${p}`), '@types/node']) linkInstalled(project, name);
  compileDiagnostics = compileOutsideProject();
}, 120_000);

afterAll(async () => {
  await server?.close();
  rmSync(work, { recursive: true, force: true });
});

describe('npm run sdk:pack', () => {
  it(`writes ${TARBALL} at the repository root`, () => {
    expect(existsSync(join(checkout, TARBALL))).toBe(true);
  });

  it('builds the package when packing: the main entry point and its type declarations are in the tarball', () => {
    expect(entries).toContain('dist/index.js');
    expect(entries).toContain('dist/index.d.ts');
  });

  it('ships every subpath export, JavaScript and declarations, and the CLI bin', () => {
    const wanted = Object.values(manifest.exports).flatMap((target) => (typeof target === 'string' ? [target] : [target.import, target.types]));
    for (const file of [...wanted, ...Object.values(manifest.bin)]) expect(entries, file).toContain(file.replace(/^\.\//, ''));
  });

  it('ships only the build, the README and the manifest: no sources, tests or tarballs', () => {
    expect(entries.filter((entry) => !/^dist\/|^README\.md$|^package\.json$/.test(entry))).toEqual([]);
    expect(entries.filter((entry) => entry.endsWith('.ts') && !entry.endsWith('.d.ts'))).toEqual([]);
  });
});

describe('a project outside the repository, after npm install <tarball>', () => {
  it('records the tarball as its dependency and installs the CLI', () => {
    const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(pkg.dependencies[manifest.name]).toMatch(new RegExp(`${TARBALL.replace(/\./g, '\\.')}$`));
    const help = execFileSync(join(project, 'node_modules/.bin/leasehold'), ['--help'], { encoding: 'utf8', cwd: project });
    expect(help).toMatch(/^Usage: leasehold <command>/);
  });

  it('imports every entry point as ESM under plain Node', () => {
    const subpaths = Object.keys(manifest.exports)
      .filter((key) => key !== './package.json')
      .map((key) => key.replace(/^\./, manifest.name));
    const script = `const loaded = {};
      for (const id of ${JSON.stringify(subpaths)}) loaded[id] = Object.keys(await import(id)).length;
      console.log(JSON.stringify(loaded));`;
    const loaded = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8' })) as Record<string, number>;
    expect(Object.keys(loaded).sort()).toEqual([...subpaths].sort());
    for (const [id, count] of Object.entries(loaded)) expect(count, id).toBeGreaterThan(0);
  });

  it("compiles the README's leader example and an import of every subpath with strict TypeScript (NodeNext)", () => {
    expect(compileDiagnostics).toEqual([]);
  });

  it("runs the README's leader example: elected against the local server, then steps down", async () => {
    server ??= await startTestServer();
    // Asynchronously: the server answers from this very process.
    const { stdout } = await promisify(execFile)(process.execPath, [join(project, 'out/leader.js')], {
      cwd: project,
      encoding: 'utf8',
      timeout: 20_000,
      env: { ...process.env, LEASEHOLD_URL: server.url },
    });
    expect(stdout).toMatch(/^leading my-app:cron-leader with fencing token \d+$/m);
  }, 30_000);
});

// The README's TypeScript path, as pasted: `npm init -y` (npm 11 writes "type": "commonjs", under which
// tsx refuses the example's top-level await), the documented `npm pkg set type=module`, the tarball,
// tsx as a dev dependency, and the example saved as app.ts, run with `npx tsx app.ts`. tsx is linked to
// the copy this repository installed, and npx runs offline: nothing is downloaded.
describe('a new TypeScript project, as the README sets it up', () => {
  const tsProject = join(work, 'ts-project');

  it("runs the README's example as app.ts with npx tsx after npm init -y and npm pkg set type=module", async () => {
    mkdirSync(tsProject);
    npm(['init', '-y'], tsProject);
    npm(['pkg', 'set', 'type=module'], tsProject);
    expect(JSON.parse(readFileSync(join(tsProject, 'package.json'), 'utf8')).type).toBe('module');
    for (const name of Object.keys(manifest.dependencies)) linkInstalled(tsProject, name);
    npm(['install', '--offline', '--ignore-scripts', join(checkout, TARBALL)], tsProject);
    // What `npm install --save-dev tsx` leaves: the package and its command.
    linkInstalled(tsProject, 'tsx');
    mkdirSync(join(tsProject, 'node_modules/.bin'), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules/tsx/dist/cli.mjs'), join(tsProject, 'node_modules/.bin/tsx'));
    writeFileSync(join(tsProject, 'app.ts'), EXAMPLE);

    server ??= await startTestServer();
    const { stdout } = await promisify(execFile)('npx', ['--offline', 'tsx', 'app.ts'], {
      cwd: tsProject,
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, LEASEHOLD_URL: server.url, npm_config_update_notifier: 'false' },
    });
    expect(stdout).toMatch(/^leading my-app:cron-leader with fencing token \d+$/m);
  }, 90_000);
});
