import { blobSlots, parseBlobRef } from "../../core/blob-refs";
import type { OmittedHistory } from "../../core/compaction";
import { addOmitted, countOmitted } from "../../core/compaction";
import { projectEntries } from "../../core/context";
import type { TreeEntry } from "../../core/entries";
import { estimateTokens } from "../../core/tokens";
import type { Sql } from "../sql";
import type { CompactionPlan, OmittedCount } from "../types";
import type { EntryRows } from "./entry-rows";
import type { ContextPlan, PathReads } from "./path-reads";

/*
 * What a compaction reads of a session, in bounded memory however long its history. A context
 * path that fits (WHOLE_ENTRIES, WHOLE_BYTES) is read whole, as before. A longer one is read as
 * its start (the goal, what the previous compaction carried), its end (at least the tokens the
 * compaction keeps, back to the start of a turn), and, from the middle, only the entries that
 * change how others read (context edits, system messages); the rest of the middle is counted a
 * page at a time (messages, tokens, files touched), never held, and the summarizer is told it
 * was left out (core's `OmittedHistory`).
 */

/** A context path up to this many entries and stored bytes is read whole. */
const WHOLE_ENTRIES = 20_000;
const WHOLE_BYTES = 8 * 1024 * 1024;
/** Stored bytes of the start of a long path read whole (at least its first entry). */
const HEAD_BYTES = 256 * 1024;
/** Entries read at a time while walking back from the end. */
const TAIL_READ = 64;
/** Past the tokens kept, stored bytes read further back to find where the turn began. */
const TURN_BYTES = 4 * 1024 * 1024;
/** Characters of payload one counting step reads. */
const COUNT_PAGE_CHARS = 2 * 1024 * 1024;

export class CompactionReads {
  readonly #rows: EntryRows;
  readonly #paths: PathReads;
  readonly #sql: Sql;

  constructor(rows: EntryRows, paths: PathReads, sql: Sql) {
    this.#rows = rows;
    this.#paths = paths;
    this.#sql = sql;
  }

  /** What to read whole and what to count of the context path at `leafId` (see the file's comment). */
  plan(leafId: string, keepRecentTokens: number): CompactionPlan {
    const context = this.#paths.contextPlan(leafId);
    const kept = context.seqs;
    // What getContextPath gives: with a compaction, the latest settings and the compaction first.
    const outside = context.compaction ? [...context.settingSeqs, context.compaction.seq] : [];
    const sorted = (seqs: Iterable<number>) => [...new Set(seqs)].sort((a, b) => a - b);
    if (kept.length <= WHOLE_ENTRIES && this.#rows.storedBytes(kept) <= WHOLE_BYTES) {
      return { seqs: sorted([...outside, ...kept]), omitted: [] };
    }
    const headEnd = this.#headEnd(kept);
    const tailStart = Math.max(headEnd, this.#tailStart(kept, keepRecentTokens, context));
    if (tailStart <= headEnd) return { seqs: sorted([...outside, ...kept]), omitted: [] };
    const middle = kept.slice(headEnd, tailStart);
    const shaping = this.#shaping(middle);
    const seqs = sorted([...outside, ...kept.slice(0, headEnd), ...shaping, ...kept.slice(tailStart)]);
    const skipped = new Set(shaping);
    const last = this.#rows.nodeAt(kept[headEnd - 1] as number);
    return {
      seqs,
      omitted: middle.filter((seq) => !skipped.has(seq)),
      ...(last ? { after: last.id } : {}),
      ...(context.compaction ? { compactionId: context.compaction.id } : {}),
    };
  }

  /** Where the start of a long path ends: HEAD_BYTES of it, at least its first entry. */
  #headEnd(kept: readonly number[]): number {
    let bytes = 0;
    for (let i = 0; i < kept.length; i++) {
      bytes += this.#rows.storedBytes([kept[i] as number]);
      if (bytes > HEAD_BYTES) return Math.max(1, i);
    }
    return kept.length;
  }

  /**
   * Where the end of a long path starts: walking back until the messages hold `keep` tokens, then
   * on to the start of that turn (a user's message), no more than TURN_BYTES further.
   */
  #tailStart(kept: readonly number[], keep: number, context: ContextPlan): number {
    const compactionId = context.compaction?.id;
    const projecting = { checkpointId: context.checkpointId };
    let tokens = 0;
    let extra = 0;
    for (let end = kept.length; end > 0; end -= TAIL_READ) {
      const start = Math.max(0, end - TAIL_READ);
      const entries = this.#rows.entries(kept.slice(start, end)) as TreeEntry[];
      for (let i = entries.length - 1; i >= 0; i--) {
        const messages = projectEntries([entries[i] as TreeEntry], compactionId, projecting);
        if (tokens >= keep) {
          if (messages.some((m) => m.role === "user")) return start + i;
          extra += this.#rows.storedBytes([kept[start + i] as number]);
          if (extra > TURN_BYTES) return start + i;
        }
        for (const message of messages) tokens += estimateTokens(message);
        tokens += this.#blobTokens([entries[i] as TreeEntry]);
      }
    }
    return 0;
  }

  /**
   * Tokens the text blobs of `entries` add once their values are read back (as stored, a
   * reference counts as its few characters): about a token for four bytes of each value.
   */
  #blobTokens(entries: readonly TreeEntry[]): number {
    const refs: string[] = [];
    for (const entry of entries) {
      for (const slot of blobSlots(entry))
        if (parseBlobRef(slot.value)?.kind === "txt") refs.push(slot.value);
    }
    if (refs.length === 0) return 0;
    const sizes = new Map(
      this.#sql<{ ref: string; json_bytes: number }>`
        SELECT ref, json_bytes FROM session_blobs WHERE ref IN (SELECT value FROM json_each(${JSON.stringify([...new Set(refs)])}))`
        .toArray()
        .map((row) => [row.ref, row.json_bytes]),
    );
    let tokens = 0;
    for (const ref of refs) tokens += Math.ceil(Math.max(0, (sizes.get(ref) ?? 0) - ref.length) / 4);
    return tokens;
  }

  /** The entries of `seqs` that change how the others are read: context edits, system messages. */
  #shaping(seqs: readonly number[]): number[] {
    return this.#sql<{ seq: number }>`
      SELECT seq FROM entries
      WHERE seq IN (SELECT value FROM json_each(${JSON.stringify(seqs)}))
        AND (type = 'context_edit' OR role = 'system')
      ORDER BY seq`
      .toArray()
      .map((row) => row.seq);
  }

  /**
   * Counts the omitted entries of `seqs` from the first, a page at a time, until `budgetMs` has
   * passed (at least one page): how many it counted, and their count.
   */
  count(seqs: readonly number[], compactionId: string | undefined, budgetMs: number): OmittedCount {
    const started = Date.now();
    let done = 0;
    let counted: Omit<OmittedHistory, "after"> = { messages: 0, tokens: 0, readFiles: [], modifiedFiles: [] };
    while (done < seqs.length && (done === 0 || Date.now() - started < budgetMs)) {
      const entries = this.#rows.entries(seqs.slice(done, done + 1024), COUNT_PAGE_CHARS) as TreeEntry[];
      const part = countOmitted(entries, compactionId);
      counted = addOmitted(counted, { ...part, tokens: part.tokens + this.#blobTokens(entries) });
      done += entries.length;
    }
    return { done, counted };
  }
}
