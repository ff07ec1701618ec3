import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { carryOverBundle } from './carry-over.js';
import { failoverSvg } from './plot.js';
import { REPO_ROOT } from './processes.js';
import { readResults } from './results-file.js';
import { renderMarkdown } from './report.js';
import type { BenchResults } from './results.js';

/**
 * The files a bench run writes: a full run BENCHMARKS.md, bench/results/latest.json and
 * docs/failover.svg; a quick run the same under bench/results/quick*, with the report's links
 * pointing beside it.
 */

function outputsOf(quick: boolean): { md: string; json: string; svg: string } {
  return quick
    ? { md: 'bench/results/quick.md', json: 'bench/results/quick.json', svg: 'bench/results/quick-failover.svg' }
    : { md: 'BENCHMARKS.md', json: 'bench/results/latest.json', svg: 'docs/failover.svg' };
}

/** `--report-only`: renders the report again from the saved JSON, measuring nothing (a full run takes in a newer bundle.json). */
export function renderAgain(quick: boolean, log: (line: string) => void): void {
  const path = join(REPO_ROOT, quick ? 'bench/results/quick.json' : 'bench/results/latest.json');
  const saved = readResults(path);
  if (!quick) {
    carryOverBundle(saved);
    writeFileSync(path, `${JSON.stringify(saved, null, 2)}\n`);
  }
  writeFileSync(join(REPO_ROOT, quick ? 'bench/results/quick.md' : 'BENCHMARKS.md'), renderMarkdown(saved));
  log(`rendered the report again from ${relative(process.cwd(), path)}`);
}

/** Writes the report, the JSON and (when any crash failover was measured) the failover plot. */
export function writeReportFiles(results: BenchResults, quick: boolean, electionTtlMs: number, log: (line: string) => void): void {
  const outputs = outputsOf(quick);
  const write = (path: string, content: string) => {
    const absolute = join(REPO_ROOT, path);
    mkdirSync(dirname(absolute), { recursive: true });
    writeFileSync(absolute, content);
    log(`wrote ${relative(process.cwd(), absolute) || path}`);
  };
  let markdown = renderMarkdown(results);
  if (quick) markdown = markdown.replace('](docs/failover.svg)', '](quick-failover.svg)').replace('](bench/results/quick.json)', '](quick.json)');
  write(outputs.md, markdown);
  write(outputs.json, `${JSON.stringify(results, null, 2)}\n`);
  if (results.failover?.some((s) => s.trials.length > 0)) {
    write(
      outputs.svg,
      failoverSvg(
        results.failover.map((s) => ({ label: s.label, failover: s.trials.map((t) => t.failoverMs), floor: s.trials.map((t) => t.floorMs) })),
        `Crash failover at TTL ${electionTtlMs} ms: kill -9 → next leader elected (${results.startedAt.slice(0, 10)}, ${results.mode} run)`,
      ),
    );
  }
}
