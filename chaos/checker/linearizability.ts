/**
 * A linearizability checker in the style of Wing & Gong, with Lowe's memoisation (as in Porcupine
 * and Knossos): depth-first search over "which operation takes effect next", pruned by a cache of
 * every (set of operations already linearized, model state) pair seen, so each configuration is
 * explored once.
 *
 * Real-time order is the only ordering constraint: operation `a` must take effect before `b` if `a`
 * completed before `b` was invoked. So `op` may be linearized next iff its invoke time is not
 * after the earliest completion among the operations not yet linearized.
 *
 * Operations whose answer never came (`completeMs: null`) are optional: they may take effect at any
 * moment after their invoke, or never. The search succeeds once every *completed* operation is
 * linearized; for an optional one the model returns only the states in which it took effect (its
 * "no effect" choice is "never linearize it", which costs nothing). Answered operations are tried
 * before optional ones, so an optional one takes effect "just in time", right before the operation
 * that needs it; earlier placements are reached only by backtracking. This ordering alone cut the
 * search 40-fold on long lease histories with lost answers.
 *
 * Models may be nondeterministic (a step returns every possible successor state) and may be
 * time-aware: each step is told the latest harness instant at which this operation can take
 * effect in this position of the order (`latestMs`), which is the earliest completion among the
 * operations still waiting (they all take effect after it).
 *
 * The linearized set is kept as (highest linearized index m, indices below m not yet linearized),
 * which is short because only concurrent and unanswered operations leave holes; optional
 * operations the model declares dead (they can never take effect again), and optional operations
 * whose `settleMs` is before the invoke of a linearized one (their moment has passed), are dropped
 * from the holes so they do not grow the cache key forever. Without that, a burst of failed
 * requests whose effect is unknown (a database restart) multiplies the search by every way they
 * could have been skipped.
 */

export interface HistoryOp<I> {
  invokeMs: number;
  /** null: no answer; the operation may take effect at any time after invoke, or never. */
  completeMs: number | null;
  /**
   * For an optional operation (`completeMs: null`): the latest instant at which it can take effect,
   * if that is known (the service answered it with an error: whatever it did, it did before). Once
   * an operation invoked after this instant is linearized, the optional one is out for good.
   */
  settleMs?: number;
  input: I;
}

export interface StepContext {
  /** The latest harness instant at which this operation can take effect at this point of the order. */
  latestMs: number;
}

export interface Model<S, I> {
  init: S;
  /** Every state the operation can lead to from `state` (empty: it cannot be linearized here). */
  step(state: S, input: I, context: StepContext): S[];
  /** A string that is equal for equal states: the memoisation key. */
  key(state: S): string;
  /** For optional operations: true if it can take effect neither in `state` nor in any later state. */
  isDead?(state: S, input: I): boolean;
  /**
   * For optional operations: equal keys mean the operations are interchangeable except for their time
   * windows (same kind, same arguments). When several of them, as the next step, lead to the same
   * state, only the one with the narrowest window is tried: the others stay optional for later, which
   * allows everything the tried one would have. Null: not interchangeable with anything.
   */
  symmetryKey?(input: I): string | null;
}

export interface LinearizeOptions {
  /** Give up (result "inconclusive") after caching this many configurations. Default 1,000,000. */
  maxStates?: number;
}

export type LinearizeResult<S> =
  | { kind: 'linearizable'; order: number[]; statesExplored: number }
  | {
      kind: 'not-linearizable';
      statesExplored: number;
      /** The furthest the search got: operations linearized so far, in order, and the state they led to. */
      longestPrefix: number[];
      stateAtPrefix: S;
      /** Completed operations that could have been next there, but the model accepted none of them. */
      stuckOn: number[];
    }
  | { kind: 'inconclusive'; statesExplored: number; reason: string };

export const DEFAULT_MAX_STATES = 1_000_000;

interface Node<S> {
  /** Highest linearized index (in invoke order), -1 before any. */
  m: number;
  /** Sorted indices below m that are not linearized (and not dead). */
  holes: number[];
  state: S;
  /** Completed operations linearized so far. */
  done: number;
  parent: Node<S> | undefined;
  /** The operation this node linearized (in invoke order). */
  last: number;
}

/** Indices in results refer to positions in the `ops` array given. */
export function checkLinearizable<S, I>(
  model: Model<S, I>,
  ops: readonly HistoryOp<I>[],
  options: LinearizeOptions = {},
): LinearizeResult<S> {
  const maxStates = options.maxStates ?? DEFAULT_MAX_STATES;
  const byInvoke = ops.map((_, i) => i).sort((a, b) => ops[a]!.invokeMs - ops[b]!.invokeMs || a - b);
  const n = byInvoke.length;
  const invoke = byInvoke.map((i) => ops[i]!.invokeMs);
  const complete = byInvoke.map((i) => ops[i]!.completeMs ?? Infinity);
  const required = byInvoke.map((i) => ops[i]!.completeMs !== null);
  const settle = byInvoke.map((i) => (ops[i]!.completeMs === null ? (ops[i]!.settleMs ?? Infinity) : Infinity));
  const symmetry = byInvoke.map((i) => (ops[i]!.completeMs === null ? (model.symmetryKey?.(ops[i]!.input) ?? null) : null));
  const input = byInvoke.map((i) => ops[i]!.input);
  const totalRequired = required.filter(Boolean).length;

  // suffixMinComplete[j]: the earliest completion among operations j.. in invoke order.
  const suffixMinComplete = new Array<number>(n + 1).fill(Infinity);
  for (let j = n - 1; j >= 0; j--) suffixMinComplete[j] = Math.min(complete[j]!, suffixMinComplete[j + 1]!);

  const root: Node<S> = { m: -1, holes: [], state: model.init, done: 0, parent: undefined, last: -1 };
  const seen = new Set<string>();
  const stack: Node<S>[] = [root];
  let deepest = root;
  let deepestStuck: number[] = [];

  const pathOf = (node: Node<S>): number[] => {
    const order: number[] = [];
    for (let at: Node<S> | undefined = node; at && at.last >= 0; at = at.parent) order.push(byInvoke[at.last]!);
    return order.reverse();
  };

  while (stack.length > 0) {
    const node = stack.pop()!;
    const key = `${node.m}|${node.holes.join(',')}|${model.key(node.state)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (seen.size > maxStates) {
      return {
        kind: 'inconclusive',
        statesExplored: seen.size,
        reason: `gave up after ${maxStates} states (about ${node.done} of ${totalRequired} answered operations linearized)`,
      };
    }
    if (node.done === totalRequired) {
      return { kind: 'linearizable', order: pathOf(node), statesExplored: seen.size };
    }

    let latestMs = suffixMinComplete[node.m + 1]!;
    for (const h of node.holes) latestMs = Math.min(latestMs, complete[h]!);
    const candidates = node.holes.filter((h) => invoke[h]! <= latestMs);
    for (let j = node.m + 1; j < n && invoke[j]! <= latestMs; j++) candidates.push(j);
    // Answered operations first: an unanswered one is tried only after them, so it takes effect as
    // late as it can, right before the operation that needs its effect ("just in time"). Any
    // earlier placement is still explored on backtracking, but is rarely needed.
    candidates.sort((a, b) => Number(required[b]) - Number(required[a]) || a - b);

    const children: Node<S>[] = [];
    const rejected: number[] = [];
    /** (symmetry key, resulting state) → the optional candidate with the narrowest window so far. */
    const narrowest = new Map<string, Node<S>>();
    for (const c of candidates) {
      const nexts = model.step(node.state, input[c]!, { latestMs });
      if (nexts.length === 0 && required[c]) rejected.push(c);
      for (const next of nexts) {
        const child = advance(node, c, next);
        const sym = symmetry[c];
        if (sym === null || sym === undefined) {
          children.push(child);
          continue;
        }
        // Interchangeable optional operations reaching the same state: keep the one whose window
        // [invoke, settle] lies inside the other's, so the wider one stays available for later.
        const groupKey = `${sym}\u0000${model.key(next)}`;
        const best = narrowest.get(groupKey);
        if (best === undefined) narrowest.set(groupKey, child);
        else if (invoke[c]! >= invoke[best.last]! && settle[c]! <= settle[best.last]!) narrowest.set(groupKey, child);
        else if (!(invoke[best.last]! >= invoke[c]! && settle[best.last]! <= settle[c]!)) children.push(child); // not nested: keep both
      }
    }
    children.push(...narrowest.values());
    children.sort((a, b) => Number(required[b.last]) - Number(required[a.last]) || candidates.indexOf(a.last) - candidates.indexOf(b.last));
    if (node.done > deepest.done || (node.done === deepest.done && deepestStuck.length === 0 && rejected.length > 0)) {
      deepest = node;
      deepestStuck = rejected;
    }
    // Depth first, in candidate order.
    for (let k = children.length - 1; k >= 0; k--) stack.push(children[k]!);
  }

  return {
    kind: 'not-linearizable',
    statesExplored: seen.size,
    longestPrefix: pathOf(deepest),
    stateAtPrefix: deepest.state,
    stuckOn: (deepestStuck.length > 0 ? deepestStuck : firstWaiting(deepest)).map((c) => byInvoke[c]!),
  };

  function advance(node: Node<S>, c: number, state: S): Node<S> {
    let holes: number[];
    let m = node.m;
    if (c > m) {
      holes = node.holes.slice();
      for (let j = m + 1; j < c; j++) holes.push(j);
      m = c;
    } else {
      holes = node.holes.filter((h) => h !== c);
    }
    // Every later operation takes effect after this point, so after the invoke of op m.
    const floorMs = invoke[m]!;
    holes = holes.filter((h) => required[h] || (settle[h]! >= floorMs && !model.isDead?.(state, input[h]!)));
    return { m, holes, state, done: node.done + (required[c] ? 1 : 0), parent: node, last: c };
  }

  /** The completed operations still waiting at a node (for the report when no candidate was tried). */
  function firstWaiting(node: Node<S>): number[] {
    const waiting = node.holes.filter((h) => required[h]);
    for (let j = node.m + 1; j < n && waiting.length < 3; j++) if (required[j]) waiting.push(j);
    return waiting.slice(0, 3);
  }
}
