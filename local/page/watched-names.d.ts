// Types of watched-names.js, a plain ES module the browser loads as is (the page has no build step).

export interface WatchedNameRule {
  pattern: RegExp;
  max: number;
  noun: string;
  nouns: string;
}

export declare function parseWatchedNames(param: string | null | undefined, rule: Pick<WatchedNameRule, 'pattern' | 'max'>): string[];
export declare function formatWatchedNames(names: readonly string[]): string;
export declare function refuseWatchedName(name: string, watched: readonly string[], rule: WatchedNameRule): string | undefined;
