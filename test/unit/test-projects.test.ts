import { execFileSync, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import config from '../../vitest.config.mjs';

// The projects name some files one by one (those whose kind differs from their folder's): a file
// renamed or removed must not leave a name behind that quietly matches nothing.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const projects = (config.test?.projects ?? []) as Array<{ test: { name: string; include: string[]; exclude?: string[] } }>;
const named = (patterns: string[] = []) => patterns.filter((p) => p.startsWith('test/') && !p.includes('*'));

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [relative(ROOT, path)] : [];
  });
}

describe('the test projects', () => {
  it('are unit, integration and slow, and only unit runs without DynamoDB Local', () => {
    expect(projects.map((p) => p.test.name)).toEqual(['unit', 'integration', 'slow']);
    const globalSetups = Object.fromEntries(projects.map((p) => [p.test.name, (p.test as { globalSetup?: string[] }).globalSetup ?? []]));
    expect(globalSetups).toEqual({ unit: [], integration: ['test/support/global-setup.ts'], slow: ['test/support/global-setup.ts'] });
  });

  it('name only test files that exist', () => {
    const all = new Set(testFiles(join(ROOT, 'test')));
    const missing = projects.flatMap((p) => [...named(p.test.include), ...named(p.test.exclude)]).filter((file) => !all.has(file));
    expect(missing).toEqual([]);
  });

  it('refuse, in unit, a child process or a socket, naming where such a test belongs', () => {
    const belongs = /A unit test may not .*: list the file under integration or slow in vitest\.config\.mts\./;
    expect(() => spawn('java', ['-version'])).toThrow(belongs);
    expect(() => execFileSync('true')).toThrow(belongs);
    expect(() => connect(8000, '127.0.0.1')).toThrow(belongs);
    expect(() => createServer().listen(0)).toThrow(belongs);
  });
});
