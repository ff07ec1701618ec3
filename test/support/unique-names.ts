/**
 * A maker of names no other test shares, in the one DynamoDB Local of the run and across runs:
 * `${head}${label}-${n}-${random}${tail}`, `n` counting this maker's calls. A prefix ends in its
 * `tail` (".", say), so every name under it is fresh too.
 */
export function uniqueNames(head: string, tail = ''): (label: string) => string {
  let seq = 0;
  return (label) => {
    seq += 1;
    return `${head}${label}-${seq}-${Math.random().toString(36).slice(2, 8)}${tail}`;
  };
}
