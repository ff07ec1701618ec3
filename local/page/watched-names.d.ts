// Types of watched-names.js, a plain ES module the browser loads as is (the page has no build step).

export interface WatchedNameRule {
  pattern: RegExp;
  max: number;
  noun: string;
  nouns: string;
}

export interface WatchedNames {
  parse(param: string | null | undefined): string[];
  format(names: readonly string[]): string;
  refuse(name: string, watched: readonly string[]): string | undefined;
}

export declare function watchedNames(rule: WatchedNameRule): WatchedNames;
