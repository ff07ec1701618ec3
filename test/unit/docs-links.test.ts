import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import GithubSlugger from 'github-slugger';
import { describe, expect, it } from 'vitest';

// The docs are one page per topic that link to each other; a moved section or a renamed heading
// must not leave a link pointing nowhere. Anchors are computed the way GitHub renders headings.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DOCS = ['README.md', 'client/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The root README answers "what is it and how do I try it"; everything else has a page in docs/. */
const README_MAX_LINES = 300;

interface Link {
  doc: string;
  target: string;
}

/** Markdown text outside fenced code blocks, with inline code removed (links there are not links). */
function prose(text: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    else if (!fenced) lines.push(line.replace(/`[^`]*`/g, ''));
  }
  return lines;
}

function linksOf(doc: string): Link[] {
  const links: Link[] = [];
  for (const line of prose(readFileSync(join(ROOT, doc), 'utf8'))) {
    for (const match of line.matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)) links.push({ doc, target: match[1]! });
  }
  return links;
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOf(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (anchors === undefined) {
    // GitHub slugs a heading's text with inline code kept as text (the backticks themselves drop out).
    const slugger = new GithubSlugger();
    anchors = new Set();
    let fenced = false;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.startsWith('```')) fenced = !fenced;
      const heading = fenced ? null : /^#{1,6} (.+)$/.exec(line);
      if (heading) anchors.add(slugger.slug(heading[1]!));
    }
    anchorCache.set(file, anchors);
  }
  return anchors;
}

/** A page of more lines than this opens with a contents list (`## Contents`, a list of links to its sections). */
const CONTENTS_MIN_LINES = 300;

/** The headings of a Markdown text outside fenced code, in order. */
function headings(text: string): Array<{ level: number; text: string }> {
  const found: Array<{ level: number; text: string }> = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^(#{1,6}) (.+)$/.exec(line);
    if (heading) found.push({ level: heading[1]!.length, text: heading[2]! });
  }
  return found;
}

/** The same-page anchors linked from the `## Contents` section, or undefined without one. */
function contentsOf(text: string): string[] | undefined {
  const lines = text.split('\n');
  const start = lines.indexOf('## Contents');
  if (start === -1) return undefined;
  const end = lines.findIndex((line, i) => i > start && /^#{1,2} /.test(line));
  const section = lines.slice(start + 1, end === -1 ? undefined : end).join('\n');
  return [...section.matchAll(/\]\(#([^)\s]+)\)/g)].map((match) => match[1]!);
}

function isExternal(target: string): boolean {
  return /^[a-z]+:/i.test(target);
}

describe('the documentation', () => {
  it('links only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const doc of DOCS) {
      for (const { target } of linksOf(doc)) {
        if (isExternal(target)) continue;
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? join(ROOT, doc) : resolve(ROOT, dirname(doc), path);
        if (!existsSync(file)) broken.push(`${doc}: ${target} (no file ${relative(ROOT, file)})`);
        else if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(file).has(anchor)) broken.push(`${doc}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('keeps the SDK package README self-contained: no link that resolves only inside this repository', () => {
    const local = linksOf('client/README.md').filter((link) => !isExternal(link.target));
    expect(local).toEqual([]);
  });

  it(`keeps the root README short: at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it('quotes no test counts, which go stale (CI prints the count)', () => {
    const stale = DOCS.flatMap((doc) =>
      readFileSync(join(ROOT, doc), 'utf8')
        .split('\n')
        .filter((line) => /\b\d[\d,]* passed\b/.test(line))
        .map((line) => `${doc}: ${line.trim()}`),
    );
    expect(stale).toEqual([]);
  });

  it(`gives every page in docs/ over ${CONTENTS_MIN_LINES} lines a contents list linking each of its sections`, () => {
    const missing: string[] = [];
    for (const doc of DOCS.filter((d) => d.startsWith('docs/'))) {
      const text = readFileSync(join(ROOT, doc), 'utf8');
      if (text.split('\n').length <= CONTENTS_MIN_LINES) continue;
      const contents = contentsOf(text);
      if (contents === undefined) {
        missing.push(`${doc}: no "## Contents"`);
        continue;
      }
      const anchors = anchorsOf(join(ROOT, doc));
      for (const target of contents) if (!anchors.has(target)) missing.push(`${doc}: contents link #${target} names no heading`);
      const slugger = new GithubSlugger();
      const sections = headings(text)
        .map(({ level, text: heading }) => ({ level, slug: slugger.slug(heading) }))
        .filter(({ level, slug }) => level === 2 && slug !== 'contents');
      for (const { slug } of sections) if (!contents.includes(slug)) missing.push(`${doc}: contents lists no #${slug}`);
    }
    expect(missing).toEqual([]);
  });

  it('gives each topic one page in docs/', () => {
    for (const page of ['api', 'sdk', 'watch', 'deploy', 'operate', 'local', 'safety', 'performance', 'chaos']) {
      expect(existsSync(join(ROOT, 'docs', `${page}.md`)), `docs/${page}.md`).toBe(true);
    }
  });
});
