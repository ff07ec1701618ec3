import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SECTIONS, type Section } from './plan.js';
import { REPO_ROOT } from './processes.js';
import { readResults } from './results-file.js';
import type { BenchResults } from './results.js';
import { sameScaleRow } from './scale.js';

/**
 * What a run that measured only part of the report takes from earlier runs, so BENCHMARKS.md stays
 * whole: the other sections (`--only`), the other scale rows (`--scale-leases`), and a newer
 * standalone bundle measurement (`npm run bench:bundle`). Each carried part is named in the report.
 */

/** With `--scale-leases`, the scale rows not measured now are kept from the previous full results, with their dates. */
export function carryOverScaleRows(results: BenchResults): void {
  const path = join(REPO_ROOT, 'bench/results/latest.json');
  if (!existsSync(path)) return;
  const previous = readResults(path);
  const measured = results.scale ?? [];
  const kept = (previous.scale ?? [])
    .filter((row) => !measured.some((m) => sameScaleRow(m, row)))
    .map((row) => ({ ...row, measuredAt: row.measuredAt ?? previous.startedAt }));
  results.scale = [...kept, ...measured].sort((a, b) => Number(a.batch === true) - Number(b.batch === true) || a.leases - b.leases);
}

/** `npm run bench:bundle` keeps its own JSON: a newer one than the report's wins, and is named as carried over. */
export function carryOverBundle(results: BenchResults): void {
  const bundlePath = join(REPO_ROOT, 'bench/results/bundle.json');
  if (!existsSync(bundlePath)) return;
  const standalone = JSON.parse(readFileSync(bundlePath, 'utf8')) as NonNullable<BenchResults['bundle']>;
  if (results.bundle !== undefined && standalone.measuredAt <= results.bundle.measuredAt) return;
  results.bundle = standalone;
  results.carriedOver = (results.carriedOver ?? []).filter((c) => c.section !== 'bundle');
  results.carriedOver.push({ section: 'bundle', startedAt: standalone.measuredAt, command: standalone.command, ...(standalone.machine ? { cpuModel: standalone.machine.cpuModel } : {}) });
}

/** The results key of each section (the `--only` names differ for two of them). */
const SECTION_KEYS: Record<Section, Array<keyof BenchResults>> = {
  latency: ['latency'],
  peers: ['peerLatency'],
  scale: ['scale'],
  cost: ['cost'],
  failover: ['failover'],
  handover: ['handover'],
  coldstart: ['coldStart'],
  epoch: ['epoch'],
  bundle: ['bundle'],
  pause: ['pause'],
  rolling: ['rolling'],
  groups: ['groups', 'groupsEpoch'],
  regions: ['regions'],
  rwlocks: ['rwlocks'],
};

/**
 * A full run of some sections keeps BENCHMARKS.md whole: every other section is copied from the
 * previous full run's JSON, and the report names the run each one came from.
 */
export function carryOver(results: BenchResults, only: Set<Section>): void {
  const path = join(REPO_ROOT, 'bench/results/latest.json');
  if (!existsSync(path)) return;
  const previous = readResults(path);
  const target = results as unknown as Record<string, unknown>;
  const source = previous as unknown as Record<string, unknown>;
  results.carriedOver = [];
  for (const section of SECTIONS) {
    if (only.has(section)) continue;
    const keys = SECTION_KEYS[section].filter((key) => source[key] !== undefined);
    if (keys.length === 0) continue;
    for (const key of keys) target[key] = source[key];
    const earlier = previous.carriedOver?.find((c) => c.section === section);
    results.carriedOver.push(earlier ?? { section, startedAt: previous.startedAt, command: previous.command, cpuModel: previous.machine.cpuModel });
  }
  if (!only.has('bundle')) carryOverBundle(results);
  if (!results.peers.etcd && previous.peers.etcd) results.peers.etcd = previous.peers.etcd;
  if (!results.peers.redis && previous.peers.redis) results.peers.redis = previous.peers.redis;
}
