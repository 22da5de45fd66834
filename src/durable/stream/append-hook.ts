import type { Reloadable } from "../transaction";

/**
 * What a host adds to a write of its own (an append, or a create with its first data): a
 * generation's, its bytes counted against its session's quotas, in the append's transaction; a
 * stream's own object, its tenant's quotas.
 */
export interface AppendHook {
  /** Runs once the body is read, before the write's checks: may wait for room, or refuse it. */
  reserve?(bytes: number): Promise<void>;
  /**
   * Runs once the records are written, in their transaction, with the bytes the stream holds more
   * (its records', not the body's); a throw refuses the append whole.
   */
  appended(bytes: number): void;
  /** What `appended` writes in memory, read again should the transaction fail. */
  held: readonly Reloadable[];
}
