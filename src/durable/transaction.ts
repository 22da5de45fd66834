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

/** Per storage, while a transaction runs: what waits for it to commit. */
const committing = new WeakMap<DurableObjectStorage, Array<() => void>>();

/**
 * Runs `work` in one transaction of `storage`; should it fail, each of `held` reads its state again.
 * A transaction within another is part of it: what it hands to `afterCommit` waits for the outer one.
 */
export function transaction<T>(storage: DurableObjectStorage, held: readonly Reloadable[], work: () => T): T {
  const waiting = committing.get(storage);
  const mark = waiting?.length ?? 0;
  if (!waiting) committing.set(storage, []);
  try {
    const result = storage.transactionSync(work);
    if (!waiting) {
      const after = committing.get(storage) ?? [];
      committing.delete(storage);
      for (const then of after) then();
    }
    return result;
  } catch (error) {
    if (waiting) waiting.length = mark;
    else committing.delete(storage);
    for (const state of held) state.reload();
    throw error;
  }
}

/**
 * Runs `then` once what the running transaction wrote is committed (at once outside of one), and
 * never should it fail: a watcher must not hear of a write that was rolled back.
 */
export function afterCommit(storage: DurableObjectStorage, then: () => void): void {
  const waiting = committing.get(storage);
  if (waiting) waiting.push(then);
  else then();
}
