/**
 * pi's opening of a file (`open` writes it where pi reads it and opens it there), made again when
 * pi gave two entries one id. pi gives a version 1 file's entries new 8-hex ids without checking
 * them against those it gave before (its migration never fills the set it checks), so about one
 * opening in 8,600 of a 1,000-entry file has a duplicate, and pi's own context building then walks
 * a cycle until it throws. Its ids are random: the next opening is whole. Five in a row with a
 * duplicate are returned as they are, for the test to fail on.
 */
export function withDistinctIds<T extends { getEntries(): ReadonlyArray<{ id: string }> }>(open: () => T): T {
  for (let attempt = 1; ; attempt++) {
    const manager = open();
    const ids = manager.getEntries().map((entry) => entry.id);
    if (new Set(ids).size === ids.length || attempt === 5) return manager;
  }
}
