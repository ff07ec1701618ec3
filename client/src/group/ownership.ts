import { createTermContext, type TermContext } from '../term/context.js';
import type { Term } from '../term/term.js';
import { partitionLeaseName } from './names.js';
import type { GroupSettings } from './settings.js';

/**
 * What this member owns: each owned partition's term, and each partition's term context (built on
 * first use, then kept). Every read here is pure: `isOwner` and the rest read the clock once and
 * end nothing, so they may be asked at any instant (the chaos harness probes deadlines with them).
 */
export class Ownerships {
  private readonly contexts = new Map<string, TermContext>();
  private readonly terms = new Map<string, Term>();
  private readonly partitionOf = new Map<Term, string>();

  constructor(private readonly settings: GroupSettings) {}

  contextOf(partition: string): TermContext {
    let ctx = this.contexts.get(partition);
    if (ctx === undefined) {
      ctx = createTermContext(this.settings.api, partitionLeaseName(this.settings.group, partition), this.settings.termOptions);
      this.contexts.set(partition, ctx);
    }
    return ctx;
  }

  /** The partition's term, valid or not (until its end is heard). */
  termOf(partition: string): Term | undefined {
    return this.terms.get(partition);
  }

  /** Every term not yet heard to end. */
  all(): Term[] {
    return [...this.terms.values()];
  }

  /** How many terms are held (ended ones not yet heard included). */
  get size(): number {
    return this.terms.size;
  }

  isOwner(partition: string): boolean {
    return this.terms.get(partition)?.isValid() === true;
  }

  owned(): string[] {
    return this.settings.partitions.filter((p) => this.isOwner(p));
  }

  token(partition: string): number | undefined {
    const term = this.terms.get(partition);
    return term?.isValid() ? term.token : undefined;
  }

  signal(partition: string): AbortSignal {
    const term = this.terms.get(partition);
    if (term?.isValid()) return term.signal;
    return AbortSignal.abort(new Error(`This member does not own partition "${partition}" of group "${this.settings.group}".`));
  }

  adopt(partition: string, term: Term): void {
    this.terms.set(partition, term);
    this.partitionOf.set(term, partition);
  }

  /** Forgets an ended term; returns its partition, or undefined for a term that is not a partition's. */
  forget(term: Term): string | undefined {
    const partition = this.partitionOf.get(term);
    if (partition === undefined) return undefined;
    this.partitionOf.delete(term);
    if (this.terms.get(partition) === term) this.terms.delete(partition);
    return partition;
  }
}
