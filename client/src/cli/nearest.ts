/** Typo suggestions for flags and commands: `--holdr` → `--holder`, `acquir` → `acquire`. */

/**
 * The known name closest to `typed` by edit distance (insertions, deletions, substitutions), if it
 * is close enough to be a typo: one edit per three letters of the known name, at least one, at most two.
 */
export function nearestName(typed: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(typed, name);
    const allowed = Math.min(2, Math.max(1, Math.floor(name.length / 3)));
    if (distance <= allowed && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** Edit distance where swapping two neighbouring letters is one edit (optimal string alignment), row by row. */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      let cost = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) cost = Math.min(cost, (before[j - 2] as number) + 1);
      current[j] = cost;
    }
    before = previous;
    previous = current;
  }
  return previous[b.length] as number;
}
