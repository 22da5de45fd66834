import { projectEntries } from "../../core/context";
import type { StoredEntry, TreeEntry } from "../../core/entries";
import type { TextLine } from "../../core/entry-text";
import { entryTextLines, messageLine } from "../../core/entry-text";
import type { Result } from "../../core/errors";
import { capture } from "../../core/errors";
import type { AgentMessage } from "../../core/messages";
import { storageWork } from "../transient";
import type { ContextLines, ContextWindow, EntryPlace, ShownEntries, TreeLinesPage } from "../types";
import type { SessionObjectState } from "./object-state";
import type { SessionCalls } from "./session-calls";

/*
 * What a reader is shown of a session (MCP's read tools): a window of a context's lines, of its
 * tree's lines, the entries around one. Each answer costs what it shows, however large the
 * session: entries are read a page at a time from where the window starts and made into lines
 * cut to a length one entry at a time, an image's blob never read for a line; an entry comes
 * whole only while small and within the answer's budget, else as its place, its size known
 * without reading its images.
 */

/** Entries one read of a context's lines reads at most (those of settings or labels show none). */
const MAX_READ_ENTRIES = 1000;

/** An entry too large to carry whole, as its place and size. */
function placeOf(entry: StoredEntry, chars: number): EntryPlace {
  const { id, seq, type, parentId, timestamp } = entry;
  return { id, seq, type, parentId, timestamp, omitted: { chars } };
}

export class ShownAnswers {
  readonly #object: SessionObjectState;
  readonly #calls: SessionCalls;

  constructor(object: SessionObjectState, calls: SessionCalls) {
    this.#object = object;
    this.#calls = calls;
  }

  /**
   * Lines of the context of `leafId` (the head when undefined) in `window`, each message's text cut
   * to `maxChars`: one page of its entries read from where the window starts (PAGE_CHARS, at most
   * MAX_READ_ENTRIES), as many of them as the window asks for.
   */
  contextLines(
    leafId: string | null | undefined,
    window: ContextWindow,
    maxChars: number,
  ): Promise<Result<ContextLines>> {
    return this.#calls.copied(() =>
      capture(async () => {
        this.#calls.checkListed();
        const session = this.#object.session;
        const { seqs, compactionId, projecting } = storageWork(() => session.reads.contextParts(leafId));
        const total = seqs.length;
        const backwards = "before" in window;
        const at = Math.min(backwards ? (window.before ?? total) : window.from, total);
        // Backwards, the entries before `at` are read from the last.
        const entriesRead = backwards
          ? seqs.slice(Math.max(0, at - MAX_READ_ENTRIES), at).reverse()
          : seqs.slice(at, at + MAX_READ_ENTRIES);
        const stored = storageWork(() => session.reads.page(entriesRead)).entries;
        const entries: ContextLines["entries"] = [];
        let skip = backwards ? 0 : window.skip;
        let lines = 0;
        let chars = 0;
        for (const entry of await this.#object.blobs.fillText(stored)) {
          const messages = projectEntries([entry as TreeEntry], compactionId, projecting);
          // Forwards, the entries that show nothing after the last line asked for come too.
          if (!backwards && lines >= window.lines && messages.length > skip) break;
          const shown: TextLine[] = [];
          if (!backwards) {
            for (const message of messages.slice(skip, skip + window.lines - lines))
              shown.push(messageLine(message, maxChars));
            lines += shown.length;
          } else {
            for (let i = messages.length - 1; i >= 0 && chars < window.chars; i--) {
              const line = messageLine(messages[i] as AgentMessage, maxChars);
              chars += line.head.length + line.text.length;
              shown.unshift(line);
            }
          }
          skip = 0;
          entries.push({ id: entry.id, lines: shown, count: messages.length });
          if (backwards && chars >= window.chars) break;
        }
        if (backwards) entries.reverse();
        return { total, from: backwards ? at - entries.length : at, entries };
      }),
    );
  }

  /** `count` lines of the tree from the line in position `from` (see `SessionReads.treeLines`). */
  treeLines(from: number, count: number): Promise<Result<TreeLinesPage>> {
    return this.#calls.run((session) => session.reads.treeLines(from, count));
  }

  /**
   * The entries around `centre` (an entry's id, or a seq a search found), `around` on each side,
   * each as its lines cut to `maxChars` and whole while it is at most `wholeChars` of JSON and fits
   * in what is `left` (see `ShownEntries`).
   */
  entriesAround(
    centre: string | number,
    around: number,
    options: { maxChars: number; wholeChars: number; left: number },
  ): Promise<Result<ShownEntries>> {
    return this.#calls.copied(() =>
      capture(async () => {
        this.#calls.checkListed();
        const session = this.#object.session;
        const blobs = this.#object.blobs;
        let rest = storageWork(() => session.reads.seqsAround(centre, around));
        let left = options.left;
        const entries: ShownEntries["entries"] = [];
        while (rest.length > 0) {
          const page = storageWork(() => session.reads.page(rest));
          rest = page.rest;
          for (const stored of await blobs.fillText(page.entries)) {
            const lines: TextLine[] = entryTextLines(stored, options.maxChars);
            const chars = JSON.stringify(stored).length + storageWork(() => blobs.imageChars(stored));
            if (chars <= options.wholeChars && chars <= left) {
              left -= chars;
              const [whole] = await blobs.fill([stored]);
              entries.push({ lines, entry: whole as StoredEntry });
            } else entries.push({ lines, entry: placeOf(stored, chars) });
          }
        }
        return { entries, left };
      }),
    );
  }
}
