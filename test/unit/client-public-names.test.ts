import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The SDK's public surface, name by name: every value and type each entry point of the package's
 * `exports` map offers. The committed list (client-public-names.json) was written before the SDK
 * moved into folders; a move that drops or renames a public name fails here.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY_POINTS: Record<string, string> = {
  leasehold: 'client/src/index.ts',
  'leasehold/lambda': 'client/src/lambda/index.ts',
  'leasehold/protocol': 'client/src/protocol/index.ts',
  'leasehold/dynamodb': 'client/src/dynamodb/index.ts',
  'leasehold/postgres': 'client/src/postgres/index.ts',
};

function publicNames(): Record<string, string[]> {
  const files = Object.values(ENTRY_POINTS).map((file) => `${root}${file}`);
  const program = ts.createProgram(files, { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, skipLibCheck: true, noEmit: true, types: ['node'] });
  const checker = program.getTypeChecker();
  const out: Record<string, string[]> = {};
  for (const [entry, file] of Object.entries(ENTRY_POINTS)) {
    const source = program.getSourceFile(`${root}${file}`);
    const symbol = source && checker.getSymbolAtLocation(source);
    if (symbol === undefined) throw new Error(`cannot read the exports of ${file}`);
    out[entry] = checker.getExportsOfModule(symbol).map((s) => s.getName()).sort();
  }
  return out;
}

describe('the SDK public names', () => {
  const committed = JSON.parse(readFileSync(new URL('./client-public-names.json', import.meta.url), 'utf8')) as Record<string, string[]>;
  const now = publicNames();

  it('lists the same entry points as the package exports map', () => {
    const pkg = JSON.parse(readFileSync(`${root}client/package.json`, 'utf8')) as { exports: Record<string, unknown> };
    const subpaths = Object.keys(pkg.exports).filter((key) => key !== './package.json').map((key) => (key === '.' ? 'leasehold' : `leasehold/${key.slice(2)}`));
    expect(subpaths.sort()).toEqual(Object.keys(ENTRY_POINTS).sort());
  });

  for (const entry of Object.keys(ENTRY_POINTS)) {
    it(`${entry} exports every name it exported before the move, and no other`, () => {
      expect(now[entry]).toEqual(committed[entry]);
    });
  }
});
