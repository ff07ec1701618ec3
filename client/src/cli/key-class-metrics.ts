import type { LeaderMetrics } from '../term/metrics.js';

/**
 * The SDK's leader metrics, relabelled for a fleet: the `lease` label (one value per lease name)
 * becomes `key_class`, the part of the name before the first `:` (`tenant:4711` → `tenant`; a name
 * without `:` is its own class). Per-lease names then cost one series per class, not per lease.
 * Samples that fall into the same class are summed: counters add up, and `leader_is_leader` counts
 * the leases of that class this process leads.
 *
 * Families, help and type lines come from the SDK's own rendering, so new SDK metrics appear here
 * without a change.
 */
export function keyClassOf(leaseName: string): string {
  const colon = leaseName.indexOf(':');
  return colon === -1 ? leaseName : leaseName.slice(0, colon);
}

export function renderByKeyClass(metrics: LeaderMetrics): string {
  const families = new Map<string, string[]>();
  for (const line of metrics.render().split('\n')) {
    const header = /^# (?:HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) /.exec(line);
    if (header === null) continue;
    const name = header[1] as string;
    families.set(name, [...(families.get(name) ?? []), line]);
  }
  const sums = new Map<string, Map<string, { labels: Record<string, string>; value: number }>>();
  for (const sample of metrics.samples()) {
    const { lease, ...rest } = sample.labels;
    const labels = { key_class: keyClassOf(lease ?? ''), ...rest };
    const key = JSON.stringify(labels);
    const family = sums.get(sample.name) ?? new Map<string, { labels: Record<string, string>; value: number }>();
    sums.set(sample.name, family);
    const entry = family.get(key) ?? { labels, value: 0 };
    entry.value += sample.value;
    family.set(key, entry);
  }
  const lines: string[] = [];
  for (const [name, headerLines] of families) {
    lines.push(...headerLines);
    for (const { labels, value } of sums.get(name)?.values() ?? []) {
      const text = Object.entries(labels)
        .map(([key, v]) => `${key}="${escapeLabel(v)}"`)
        .join(',');
      lines.push(`${name}{${text}} ${value}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
