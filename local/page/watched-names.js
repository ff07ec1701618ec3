// The names a section of the page watches (semaphores, rwlocks), kept in the address as one
// comma-separated query parameter (a name has no comma). Pure functions; no DOM, no I/O. Each
// section's rows module binds them to its name pattern, its limit and its noun.
// Types: watched-names.d.ts.

/**
 * The rules of one section's watched names: `pattern` accepts a name, the page watches at most
 * `max`, and `noun` and `nouns` name one and many ("semaphore", "semaphores") in its refusals.
 */
export function watchedNames({ pattern, max, noun, nouns }) {
  return {
    /** The watched names kept in the address: those `pattern` accepts, each once, in order, at most `max`. */
    parse(param) {
      const names = [];
      for (const name of (param ?? '').split(',')) {
        if (names.length < max && pattern.test(name) && !names.includes(name)) names.push(name);
      }
      return names;
    },
    /** The address's value for `names` (the inverse of parse). */
    format(names) {
      return names.join(',');
    },
    /** Why `name` cannot join the `watched` names, as a sentence for the user; undefined when it can. */
    refuse(name, watched) {
      if (!pattern.test(name)) {
        return `A ${noun} name is 1-200 letters, digits and . _ : -, starting with a letter or digit.`;
      }
      if (!watched.includes(name) && watched.length >= max) {
        return `The page watches at most ${max} ${nouns}: remove one first.`;
      }
      return undefined;
    },
  };
}
