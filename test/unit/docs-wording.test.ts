import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Facts the docs state in more than one place must be stated in the same words: the guarantee (the
 * README shows docs/safety.md's three lines), and what `LEASEHOLD_URL` means in the examples (the
 * API's base URL; signing follows from which API it is, never from the variable being set).
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const DOCS = ['README.md', 'client/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const EXAMPLES = readdirSync(join(ROOT, 'examples')).filter((f) => f.endsWith('.ts')).map((f) => `examples/${f}`);
const squash = (text: string) => text.replace(/\s+/g, ' ').trim();

/** The guarantee's three lines in docs/safety.md: the quoted lines right below its title. */
function guarantee(): string {
  const lines = read('docs/safety.md').split('\n');
  const first = lines.findIndex((line) => line.startsWith('> **'));
  const block = lines.slice(first, first + 3);
  expect(block.every((line) => line.startsWith('> **'))).toBe(true);
  return block.join('\n');
}

describe('the guarantee, said one way', () => {
  it("the README states it in docs/safety.md's three lines, word for word", () => {
    const lines = guarantee();
    expect(lines).toContain('At most one holder at a time, as far as clocks allow');
    expect(read('README.md')).toContain(lines);
  });

  it('no page says a lease, or a partition, has "exactly one" holder: it is at most one, as far as clocks allow', () => {
    const overclaims = DOCS.flatMap((doc) =>
      squash(read(doc))
        .split(/(?<=[.!?])\s/)
        .filter((sentence) => /exactly one (holder|worker|leader|owner)|lease is "exactly one"/i.test(sentence))
        .map((sentence) => `${doc}: ${sentence}`),
    );
    expect(overclaims).toEqual([]);
  });
});

describe('LEASEHOLD_URL, one rule', () => {
  const RULE = /`LEASEHOLD_URL` in these examples is the API's base URL[\s\S]*?or with `--sigv4`\./;

  it('the README, the SDK package README and the SDK guide say it in the same words', () => {
    const said = ['README.md', 'client/README.md', 'docs/sdk.md'].map((doc) => squash(read(doc)).match(RULE)?.[0]);
    expect(said[0]).toBeDefined();
    expect(said).toEqual([said[0], said[0], said[0]]);
  });

  it('every client built from it shows which API the default is, and signs exactly when that is an AWS one', () => {
    const sources = [...DOCS, ...EXAMPLES].map((file) => ({ file, text: read(file) }));
    const clients = sources.flatMap(({ file, text }) =>
      [...text.matchAll(/new LeaseClient\(\{[\s\S]*?\}\)/g)].map((m) => ({ file, code: m[0] })).filter(({ code }) => code.includes('LEASEHOLD_URL')),
    );
    expect(clients.length).toBeGreaterThan(5);
    for (const { file, code } of clients) {
      // `LEASEHOLD_URL!`: set by the CDK stack from `leases.url`, the deployed API.
      const fallback = code.includes('LEASEHOLD_URL!') ? 'https://abc123.execute-api.eu-west-1.amazonaws.com' : /LEASEHOLD_URL\s*\?\?\s*'([^']+)'/.exec(code)?.[1];
      expect(fallback, `${file}: ${code}`).toBeDefined();
      const aws = new URL(fallback as string).hostname.endsWith('.amazonaws.com');
      expect(code.includes('signer'), `${file}: ${code}`).toBe(aws);
    }
  });
});
