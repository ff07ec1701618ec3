import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BUNDLE_SECTION_END, BUNDLE_SECTION_START, buildHandler, spliceBundleSection } from '../../bench/bundle.js';

// The bundle section's build, without its timings: what a Lambda handler's bundle may contain.
const dir = mkdtempSync(join(tmpdir(), 'leasehold-bundle-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const inputsOf = (built: Awaited<ReturnType<typeof buildHandler>>) => Object.values(built.chunks).flatMap((c) => c.inputs);

/** The handler chunk and every chunk it imports statically, transitively: what importing it loads. */
function staticallyLoaded(built: Awaited<ReturnType<typeof buildHandler>>): Set<string> {
  const loaded = new Set<string>();
  const visit = (file: string) => {
    if (loaded.has(file)) return;
    loaded.add(file);
    for (const next of built.chunks[file]?.staticImports ?? []) visit(next);
  };
  visit(built.entryOut);
  return loaded;
}

describe('the Lambda bundle of the SDK', () => {
  it('builds from leasehold/lambda with no package but aws4fetch (SigV4) in any chunk, dynamic ones included', async () => {
    const built = await buildHandler(dir, 'lambda-watch', 'leasehold/lambda', true);
    const packages = new Set(inputsOf(built).flatMap((i) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(i)?.[1] ?? []));
    expect([...packages]).toEqual(['aws4fetch']);
  }, 60_000);

  it('leaves ws out of every chunk: the watch imports it at run time, only where the runtime has no WebSocket', async () => {
    const built = await buildHandler(dir, 'lambda-watch-ws', 'leasehold/lambda', true);
    expect(inputsOf(built).filter((i) => i.includes('node_modules/ws/'))).toEqual([]);
    // The watch's socket module is in the bundle; its import of ws stays an import for Node to resolve.
    expect(inputsOf(built).filter((i) => i.endsWith('client/src/watch/socket.ts'))).toHaveLength(1);
  }, 60_000);

  it("from leasehold, keeps the credential provider chain in a chunk loaded only by a dynamic import", async () => {
    const built = await buildHandler(dir, 'main', 'leasehold', true);
    const chainChunks = Object.entries(built.chunks).filter(([, c]) => c.inputs.some((i) => i.includes('@aws-sdk/credential-provider-node')));
    expect(chainChunks.length).toBeGreaterThan(0);
    const loaded = staticallyLoaded(built);
    expect(chainChunks.filter(([file]) => loaded.has(file))).toEqual([]);
  }, 60_000);
});

describe('the standalone bundle run', () => {
  it('replaces only its own section of BENCHMARKS.md, or appends it', () => {
    const section = [BUNDLE_SECTION_START, '## 8. new', BUNDLE_SECTION_END];
    const report = `# bench\n\n## 7. x\n\n${BUNDLE_SECTION_START}\n## 8. old\n${BUNDLE_SECTION_END}\n\n## 9. y\n`;
    expect(spliceBundleSection(report, section)).toBe(`# bench\n\n## 7. x\n\n${section.join('\n')}\n\n## 9. y\n`);
    expect(spliceBundleSection('# bench\n', section)).toBe(`# bench\n\n${section.join('\n')}\n`);
  });
});
