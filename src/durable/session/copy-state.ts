import type { EntryRef } from "../../core/append";
import type { Sql } from "../sql";
import { hasSchema } from "./schema";

/*
 * Where a fork's copy stands (the `fork_copy` row): the session it copies from, its head's seq
 * there, and the next row of the path to copy. The copy goes from the head up towards the root,
 * so what is still to copy is always the source's path root → that row: the entries with the
 * lowest seqs, every one an ancestor of what the fork holds. Once the root is copied the source
 * is told (`releaseOwed` until it has heard), then the row goes.
 *
 * Beside it, in memory only, what the source said of ids the fork was asked about: whether each
 * is an entry of the path still to copy (its type and parent) or not (null). That path never
 * changes, so what is learnt holds until the copy ends.
 */

/** Ids the state remembers the source's answer about, at most. */
const LEARNT_IDS = 100_000;

export interface CopyPosition {
  sourceId: string;
  /** What the source keeps the path by for this fork (fork-holds.ts). */
  hold: string;
  /** The seq of the fork's head in the source (and in the fork). */
  forkSeq: number;
  /** Entries of the path root → head. */
  entries: number;
  /** The next row to copy, and its depth; null: all copied. */
  next: { seq: number; depth: number } | null;
  /** The copy is done, and the source has not heard yet. */
  releaseOwed: boolean;
}

/**
 * A read or a write needs entries the fork's copy has not brought yet: the ids it looked for
 * (which the source is asked about), the entry of the path it reads up to (`reach`: the copy goes
 * on until that entry is copied), or neither when it needs the whole path. The object learns about
 * them, or copies what is needed, and runs it again (fork-copy.ts); nothing was written.
 */
export class CopyNeeded extends Error {
  readonly ids: readonly string[];
  readonly reach: string | undefined;

  constructor(need: { ids?: readonly string[]; reach?: string } = {}) {
    super(
      need.ids?.length
        ? `entries ${need.ids.join(", ")} may be on the path still to copy`
        : need.reach === undefined
          ? "the path is still to copy"
          : `the path is still to copy up to ${need.reach}`,
    );
    this.ids = need.ids ?? [];
    this.reach = need.reach;
  }
}

/** What a read that `PathReads.readsAfter` judged needs: nothing, the path copied up to an entry, or all of it. */
export function readsAfterCopy(readable: boolean | string): void {
  if (readable === true) return;
  throw new CopyNeeded(readable === false ? {} : { reach: readable });
}

export class CopyState {
  readonly #sql: Sql;
  /** The row as stored (undefined: not read yet; null: no copy). */
  #stored: CopyPosition | null | undefined;
  readonly #refs = new Map<string, EntryRef | null>();

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  get state(): Readonly<CopyPosition> | null {
    if (this.#stored === undefined) this.#stored = this.#load();
    return this.#stored;
  }

  /** Whether part of the path is still to copy. */
  get copying(): boolean {
    return this.state?.next != null;
  }

  #load(): CopyPosition | null {
    if (!hasSchema(this.#sql)) return null;
    const row = this.#sql<{
      source_id: string;
      hold: string;
      fork_seq: number;
      entries: number;
      next_seq: number | null;
      next_depth: number | null;
      release_owed: number;
    }>`SELECT source_id, hold, fork_seq, entries, next_seq, next_depth, release_owed FROM fork_copy`.toArray()[0];
    if (!row) return null;
    return {
      sourceId: row.source_id,
      hold: row.hold,
      forkSeq: row.fork_seq,
      entries: row.entries,
      next: row.next_seq === null ? null : { seq: row.next_seq, depth: row.next_depth ?? 0 },
      releaseOwed: row.release_owed === 1,
    };
  }

  /** Reads the row again (a transaction that wrote it rolled back). */
  reload(): void {
    this.#stored = undefined;
  }

  /** Forgets everything (the object's storage was dropped). */
  reset(): void {
    this.#stored = null;
    this.#refs.clear();
  }

  /** A new fork's copy: its head's row and those above it are written; `next` goes on from there. */
  begin(
    position: Omit<CopyPosition, "releaseOwed" | "next"> & { next: { seq: number; depth: number } },
  ): void {
    const { sourceId, hold, forkSeq, entries, next } = position;
    this
      .#sql`INSERT INTO fork_copy (singleton, source_id, hold, fork_seq, entries, next_seq, next_depth, release_owed)
      VALUES (1, ${sourceId}, ${hold}, ${forkSeq}, ${entries}, ${next.seq}, ${next.depth}, 0)`;
    this.#stored = { ...position, releaseOwed: false };
  }

  /** A page was written (inside its transaction): the copy goes on at `next`, or is done. */
  advance(next: CopyPosition["next"]): void {
    const state = this.state;
    if (!state) throw new Error("no copy to advance");
    this.#sql`UPDATE fork_copy SET next_seq = ${next?.seq ?? null}, next_depth = ${next?.depth ?? null},
      release_owed = ${next === null ? 1 : 0}`;
    this.#stored = { ...state, next, releaseOwed: next === null };
    if (next === null) this.#refs.clear();
  }

  /** The source heard that the copy is done: nothing of it is left. */
  released(): void {
    this.#sql`DELETE FROM fork_copy`;
    this.#stored = null;
  }

  /** What the source said of `id`: a path entry still to copy, not one (null), or not asked (undefined). */
  refOf(id: string): EntryRef | null | undefined {
    return this.#refs.get(id);
  }

  /** What the source said of `asked`: those of `found` are entries of the path still to copy, the rest not. */
  learn(asked: readonly string[], found: Readonly<Record<string, EntryRef>>): void {
    if (!this.copying) return;
    // What is learnt is only saved asking again: bounded, it is forgotten at once when too much.
    if (this.#refs.size > LEARNT_IDS) this.#refs.clear();
    for (const id of asked) this.#refs.set(id, Object.hasOwn(found, id) ? (found[id] as EntryRef) : null);
  }

  /** How far the copy is: entries of the path, and of them those copied. */
  progress(): { entries: number; copied: number } | undefined {
    const state = this.state;
    if (!state?.next) return undefined;
    return { entries: state.entries, copied: state.entries - (state.next.depth + 1) };
  }
}
