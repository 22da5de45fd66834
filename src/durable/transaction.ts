/*
 * A transaction whose writes are also held in memory (the session's state, its lifecycle): should
 * it fail, storage rolls back, and so must memory, or the object would go on from a state that
 * was never stored (a session created in memory only, a seq counted twice).
 */

/** Something that holds stored state in memory and can read it again. */
export interface Reloadable {
  /** Forgets what memory holds; it is read again from storage when next needed. */
  reload(): void;
}

/** Runs `work` in one transaction of `storage`; should it fail, each of `held` reads its state again. */
export function transaction<T>(storage: DurableObjectStorage, held: readonly Reloadable[], work: () => T): T {
  try {
    return storage.transactionSync(work);
  } catch (error) {
    for (const state of held) state.reload();
    throw error;
  }
}
