import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// client/ must be publishable on its own: these tests read the package manifest and every import
// in client/src, and walk the installed dependency tree.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CLIENT = join(ROOT, 'client');
const SRC = join(CLIENT, 'src');
const manifest = JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8')) as {
  name: string;
  type: string;
  exports: Record<string, unknown>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

const FORBIDDEN = ['aws-cdk-lib', 'constructs'];
const DYNAMODB = ['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb', '@aws-sdk/util-dynamodb'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** Every module specifier in a file: static imports and exports, side-effect imports, dynamic import(). */
function specifiers(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const pattern of [/\bfrom\s+['"]([^'"]+)['"]/g, /\bimport\s+['"]([^'"]+)['"]/g, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g, /\brequire\(\s*['"]([^'"]+)['"]\s*\)/g]) {
    for (const match of text.matchAll(pattern)) found.push(match[1] as string);
  }
  return found;
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] as string);
}

const imports = sourceFiles(SRC).flatMap((file) => specifiers(file).map((specifier) => ({ file: relative(SRC, file), specifier })));
const bare = imports.filter((i) => !i.specifier.startsWith('.'));

/** Finds a package's manifest the way Node does: node_modules folders from `fromDir` upwards. */
function findManifest(name: string, fromDir: string): string | undefined {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name, 'package.json');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

describe('the client package', () => {
  it('is named leasehold, is ESM, and exports ., ./protocol and ./dynamodb from dist/', () => {
    expect(manifest.name).toBe('leasehold');
    expect(manifest.type).toBe('module');
    expect(Object.keys(manifest.exports)).toEqual(expect.arrayContaining(['.', './protocol', './dynamodb']));
    expect(JSON.stringify(manifest.exports)).not.toContain('src/');
  });

  it('declares no aws-cdk-lib or constructs in any dependency field', () => {
    const declared = [manifest.dependencies, manifest.peerDependencies, manifest.optionalDependencies, manifest.devDependencies].flatMap((deps) =>
      Object.keys(deps ?? {}),
    );
    expect(declared.filter((name) => FORBIDDEN.includes(name))).toEqual([]);
  });

  it('has the DynamoDB SDK only as optional peer dependencies', () => {
    expect(Object.keys(manifest.dependencies ?? {}).filter((name) => DYNAMODB.includes(name))).toEqual([]);
    for (const name of Object.keys(manifest.peerDependencies ?? {})) {
      expect(manifest.peerDependenciesMeta?.[name]?.optional, `${name} should be an optional peer`).toBe(true);
    }
  });

  it('imports nothing outside client/src by relative path (no server, infra or local code)', () => {
    const escaping = imports.filter((i) => i.specifier.startsWith('.') && relative(SRC, resolve(SRC, dirname(i.file), i.specifier)).startsWith('..'));
    expect(escaping).toEqual([]);
  });

  it('imports only packages it declares, and Node built-ins only in the CLI (Node only)', () => {
    const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
    const nodeOnly = (file: string) => file.startsWith(`cli${sep}`);
    const allowed = (i: { file: string; specifier: string }) => declared.has(packageName(i.specifier)) || (nodeOnly(i.file) && i.specifier.startsWith('node:'));
    expect(bare.filter((i) => !allowed(i))).toEqual([]);
  });

  it('loads ws (an optional peer) only at run time, from the watch socket, so the SDK imports on any platform and bundles leave it out', () => {
    expect(manifest.peerDependenciesMeta?.ws?.optional).toBe(true);
    expect(bare.filter((i) => packageName(i.specifier) === 'ws')).toEqual([]);
    const loaders = sourceFiles(SRC)
      .filter((file) => /\bimport\(\s*WS_PACKAGE\s*\)/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SRC, file));
    expect(loaders).toEqual([join('watch', 'socket.ts')]);
    expect(readFileSync(join(SRC, 'watch', 'socket.ts'), 'utf8')).toContain("const WS_PACKAGE = 'ws';");
  });

  it('has no hand-written WebSocket framing or SigV4 canonicalization left', () => {
    expect(sourceFiles(SRC).filter((file) => /websocket/i.test(relative(SRC, file)))).toEqual([]);
    const sigv4 = readFileSync(join(SRC, 'transport', 'sigv4.ts'), 'utf8');
    expect(sigv4).toContain("from 'aws4fetch'");
    expect(sigv4).not.toMatch(/crypto\.subtle|createHmac|importKey/);
  });

  it('keeps the CLI out of the SDK: no module outside client/src/cli imports from it', () => {
    const cliDir = join(SRC, 'cli');
    const intoCli = imports.filter(
      (i) => !i.file.startsWith(`cli${sep}`) && i.specifier.startsWith('.') && resolve(SRC, dirname(i.file), i.specifier).startsWith(cliDir),
    );
    expect(intoCli).toEqual([]);
  });

  it('imports the DynamoDB SDK only from client/src/dynamodb', () => {
    const outside = bare.filter((i) => DYNAMODB.includes(packageName(i.specifier)) && !i.file.startsWith(`dynamodb${sep}`));
    expect(outside).toEqual([]);
  });

  it('imports node-postgres only from client/src/postgres, where it is an optional peer', () => {
    expect(bare.filter((i) => packageName(i.specifier) === 'pg' && !i.file.startsWith(`postgres${sep}`))).toEqual([]);
    expect(manifest.peerDependenciesMeta?.pg?.optional).toBe(true);
  });

  it('keeps the protocol free of dependencies', () => {
    const protocolImports = imports.filter((i) => i.file.startsWith(`protocol${sep}`));
    expect(protocolImports.filter((i) => !i.specifier.startsWith('./'))).toEqual([]);
  });

  it('pulls in neither aws-cdk-lib nor constructs anywhere in its installed dependency tree', () => {
    const seen = new Set<string>();
    const queue: Array<{ name: string; from: string }> = Object.keys(manifest.dependencies ?? {}).map((name) => ({ name, from: CLIENT }));
    while (queue.length > 0) {
      const { name, from } = queue.shift() as { name: string; from: string };
      const found = findManifest(name, from);
      if (found === undefined || seen.has(found)) continue;
      seen.add(found);
      const pkg = JSON.parse(readFileSync(found, 'utf8')) as { name: string; dependencies?: Record<string, string> };
      expect(FORBIDDEN, `reached through ${name}`).not.toContain(pkg.name);
      for (const dep of Object.keys(pkg.dependencies ?? {})) queue.push({ name: dep, from: dirname(found) });
    }
    expect(seen.size).toBeGreaterThan(Object.keys(manifest.dependencies ?? {}).length);
  });
});
