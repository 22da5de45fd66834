import { projectEntries } from "../../core/context";
import { jsonArray, textStream } from "../../core/context-answer";
import type { SessionEntry, StoredEntry, TreeEntry } from "../../core/entries";
import type { TextLine } from "../../core/entry-text";
import { entryTextLines, messageLine } from "../../core/entry-text";
import type { Result } from "../../core/errors";
import { capture, SessionError } from "../../core/errors";
import { utf8Length } from "../../core/json";
import type { AgentMessage } from "../../core/messages";
import type { AppendOptions, AppendResult, ImportOptions } from "../../core/storage";
import { slices } from "../blobs/blob-text";
import { storageWork } from "../transient";
import type {
  AppendGuard,
  Building,
  ContextAnswer,
  ContextLines,
  ContextWindow,
  EntryPage,
  EntryPlace,
  ShownEntries,
  TreeLinesPage,
} from "../types";
import type { ForkCopy } from "./fork-copy";
import type { SessionObjectState } from "./object-state";
import { checkNotFull } from "./schema";
import type { BlobAnswer, BlobPolicy } from "./session-blobs";
import type { DirectoryReports } from "./session-reports";
import type { SessionStore } from "./session-store";
import type { ByteLimit } from "./session-writes";

/*
 * How a call of the object reaches its session: which calls find it (a listed session, or one
 * being built by its builder's calls only), the store's work run as storage work with its failure
 * answered as a `Result`, and what follows a write (the directory hears of it, a large batch is
 * indexed for search just after) and bounds it (the session's room under its quotas).
 * Below, the calls with more to them than one store call: entries taken in (`EntryIntake`), a
 * context answered (`ContextAnswers`), and what a reader is shown of the session (`ShownAnswers`).
 */

export class SessionCalls {
  readonly #object: SessionObjectState;
  /** A fork's copy: calls that need entries still to copy wait for them. */
  readonly #copy: ForkCopy;
  /** The directory's reports: each write is reported. */
  readonly #reports: DirectoryReports;

  constructor(object: SessionObjectState, copy: ForkCopy, reports: DirectoryReports) {
    this.#object = object;
    this.#copy = copy;
    this.#reports = reports;
  }

  /** Whether the session is there for its routes: created, complete, and not deleted. */
  get listed(): boolean {
    return this.#object.session.exists && !this.#object.lifecycle.deleted && !this.#object.lifecycle.pending;
  }

  /**
   * A deleted session is not found by any read or write (until it is restored), nor is one a fork
   * or an import is still writing, but by the calls of its builder (`builder`: the token it was
   * created with), which find no other session.
   */
  checkListed(builder?: string): void {
    const { deleted, pending } = this.#object.lifecycle;
    const found =
      builder === undefined ? !pending : pending && this.#object.session.state.incarnation === builder;
    if (deleted || !found) throw new SessionError("not_found", "session does not exist");
  }

  /**
   * Runs `call` (which answers a Result), as if a fork's copy were complete: should it need entries
   * still to copy, it runs again once the object knows of them (see fork-copy.ts).
   */
  copied<T>(call: () => Promise<Result<T>>): Promise<Result<T>> {
    return this.#copy.retrying(call);
  }

  run<T>(read: (session: SessionStore) => T, builder?: string): Promise<Result<T>> {
    return this.copied(() =>
      capture(() => {
        this.checkListed(builder);
        return storageWork(() => read(this.#object.session));
      }),
    );
  }

  /** A read of entries, answered with their blobs' values in place of references. */
  runFilled(read: (session: SessionStore) => EntryPage): Promise<Result<EntryPage>> {
    return this.copied(() =>
      capture(async () => {
        this.checkListed();
        const page = storageWork(() => read(this.#object.session));
        return { ...page, entries: await this.#object.blobs.fill(page.entries) };
      }),
    );
  }

  /** Runs a write, then makes sure the directory will hear of it (and search index it). */
  write<T>(write: (session: SessionStore) => T, builder?: string): Promise<Result<T>> {
    return this.copied(() =>
      capture(() => {
        this.checkListed(builder);
        const result = storageWork(() => write(this.#object.session));
        this.#reports.schedule();
        // A large batch is indexed for search just after (see SearchIndex.index).
        if (this.#object.session.writes.searchBackfillPending)
          this.#object.alarm.armSoon("schedule_search_indexing");
        return result;
      }),
    );
  }

  /**
   * A write that stores bytes and waits on the way (a generation's chunks, through the stream
   * protocol): within the session's room as `limitedWrite`; the directory hears of it.
   */
  limitedStore<T>(write: (room: ByteLimit | undefined) => Promise<T>): Promise<Result<T>> {
    return this.#object.quotas.within(this.#object.session, (room) =>
      capture(async () => {
        this.checkListed();
        const result = await write(room);
        this.#reports.schedule();
        return result;
      }),
    );
  }

  /**
   * What must come before a write that stores bytes and cannot be undone (its blobs uploaded):
   * given the session's room as `limitedWrite` gives it, so that what the write will be refused for
   * is refused first, and a room too small is grown when it may.
   */
  beforeLimitedWrite<T>(
    prepare: (room: ByteLimit | undefined) => Promise<T>,
    builder?: string,
  ): Promise<Result<T>> {
    return this.#object.quotas.within(this.#object.session, (room) =>
      capture(() => {
        this.checkListed(builder);
        return prepare(room);
      }),
    );
  }

  /** A write that stores bytes: within the session's room (its quotas), growing it when it may. */
  limitedWrite<T>(
    write: (session: SessionStore, room: ByteLimit | undefined) => T,
    builder?: string,
  ): Promise<Result<T>> {
    return this.#object.quotas.within(this.#object.session, (room) =>
      this.write((session) => write(session, room), builder),
    );
  }
}

/*
 * Entries coming into the session, appended or imported: refused when the session is full (a
 * compaction excepted) or its room cannot take them before any of their blobs is uploaded; their
 * values large enough stored as blobs first under the router's policy (session-blobs.ts), then
 * written within the session's room. Its blobs no entry holds are given back when the write is
 * refused after all (another write took the room meanwhile: see `SessionBlobs.ended`). An append
 * is counted in a metric, and answered with its entries' values in place of references.
 */

export class EntryIntake {
  readonly #object: SessionObjectState;
  readonly #calls: SessionCalls;
  /** The id of the generation open longest, if one is open (see `AppendGuard`). */
  readonly #openGeneration: () => string | undefined;

  constructor(object: SessionObjectState, calls: SessionCalls, openGeneration: () => string | undefined) {
    this.#object = object;
    this.#calls = calls;
    this.#openGeneration = openGeneration;
  }

  /** Refuses the append while a generation is open (`AppendGuard.refuseWhileGenerating`). */
  #refuseWhileGenerating = (): void => {
    const generationId = this.#openGeneration();
    if (generationId === undefined) return;
    throw new SessionError(
      "leaf_conflict",
      `an answer is being generated (generation ${generationId}); written now, this would be left off its branch: write it once the generation ends`,
      { leafId: this.#object.session.state.leafId, generationId },
    );
  };

  async append(
    entries: readonly unknown[],
    options: AppendOptions & AppendGuard & { validated?: boolean; blobs?: BlobPolicy } & Building,
  ): Promise<Result<AppendResult>> {
    const { blobs: policy, builder, refuseWhileGenerating, ...appendOptions } = options;
    // A full session still takes a compaction: it is what keeps its context usable.
    const compaction = entries.every((entry) => (entry as { type?: unknown } | null)?.type === "compaction");
    const prepared = await this.#calls.beforeLimitedWrite((room) => {
      // Refused before any of its blobs is uploaded.
      if (!compaction) checkNotFull(this.#object.storage.sql, this.#object.env);
      return this.#object.blobs.prepare(
        entries,
        policy,
        (inputs, loaded) =>
          this.#object.session.writes.entriesWithin(
            this.#object.session.writes.plannedAppend(inputs, appendOptions, loaded),
            room,
          ),
        (bytes) => this.#object.session.writes.checkRoom(bytes, room),
      );
    }, builder);
    if (!prepared.ok) return prepared;
    let written = { sessionId: "", entries: 0, bytes: 0 };
    const result = await this.#calls.limitedWrite((session, room) => {
      const { nextSeq, stats, header } = session.state;
      const before = { seq: nextSeq, bytes: stats.bytes };
      // Checked in this write, with the append: no generation opens in between. A compaction is
      // always checked: it would move the head off the parent an open generation's answer goes
      // under, leaving the answer out of the context (the conversation did not go on).
      const compacts = entries.some((entry) => (entry as { type?: unknown } | null)?.type === "compaction");
      const mayWrite = refuseWhileGenerating || compacts ? this.#refuseWhileGenerating : undefined;
      const answer = session.writes.appendEntries(entries, appendOptions, room, prepared.value, mayWrite);
      written = {
        sessionId: header.id,
        entries: session.state.nextSeq - before.seq,
        bytes: session.state.stats.bytes - before.bytes,
      };
      return answer;
    }, builder);
    const givingBack = this.#object.blobs.ended(prepared.value, result.ok || written.entries > 0);
    if (givingBack) await givingBack;
    if (written.entries > 0) await this.#object.telemetry.metric({ kind: "append", ...written });
    if (!result.ok) return result;
    // A replay answers the entry as stored: with its blobs' values.
    return capture(async () => ({
      ...result.value,
      entries: await this.#object.blobs.fill(result.value.entries),
    }));
  }

  async import(
    entries: readonly SessionEntry[],
    options: ImportOptions & { blobs?: BlobPolicy } & Building,
  ): Promise<Result<void>> {
    const { blobs: policy, builder, ...importOptions } = options;
    const prepared = await this.#calls.beforeLimitedWrite((room) => {
      checkNotFull(this.#object.storage.sql, this.#object.env);
      return this.#object.blobs.prepare(
        entries,
        policy,
        (inputs, loaded) =>
          this.#object.session.writes.entriesWithin(
            this.#object.session.writes.plannedImport(inputs, importOptions, loaded),
            room,
          ),
        (bytes) => this.#object.session.writes.checkRoom(bytes, room),
      );
    }, builder);
    if (!prepared.ok) return prepared;
    const result = await this.#calls.limitedWrite(
      (session, room) => session.writes.importEntries(entries, importOptions, room, prepared.value),
      builder,
    );
    const givingBack = this.#object.blobs.ended(prepared.value, result.ok);
    if (givingBack) await givingBack;
    return result;
  }
}

/*
 * A context read as the object answers it: the version alone when the caller holds it already (no
 * body is built), else the context's JSON (see context-reads.ts), whole when kept in memory,
 * otherwise streamed page by page as it is sent; its blobs answered as their values, or as signed
 * URLs when asked for. Each answer's size and time go to a metric once sent.
 */

export class ContextAnswers {
  readonly #object: SessionObjectState;
  readonly #calls: SessionCalls;

  constructor(object: SessionObjectState, calls: SessionCalls) {
    this.#object = object;
    this.#calls = calls;
  }

  /** The context of a leaf (the head's when undefined); only what was appended when `since` allows. */
  async answer(
    leafId: string | null | undefined,
    options: { since?: string; ifNoneMatch?: readonly string[]; blobs?: BlobAnswer },
  ): Promise<Result<ContextAnswer>> {
    const result = await this.#calls.run((session): ContextAnswer => {
      const version = session.contexts.contextVersion(leafId);
      if (options.ifNoneMatch?.includes(version)) return { version, kind: "unchanged" };
      const started = Date.now();
      const answer = session.contexts.context(leafId, options.since);
      const sessionId = session.state.header.id;
      const sent = (bytes: number) =>
        this.#object.telemetry.metric({
          kind: "context",
          sessionId,
          source: answer.source,
          bytes,
          durationMs: Date.now() - started,
        });
      if ("text" in answer) {
        // The kept head context is one string already: sent whole, it saves the stream's round trips.
        // Its size is measured only for a metric that will be written (it may be megabytes).
        if (this.#object.telemetry.measuring) void sent(utf8Length(answer.text));
        return { version, kind: answer.kind, body: answer.text };
      }
      return {
        version,
        kind: answer.kind,
        body: textStream(jsonArray(answer.head, answer.pages, "}"), sent),
      };
    });
    if (!result.ok || result.value.kind === "unchanged") return result;
    const { body, ...answer } = result.value;
    const blobs = options.blobs ?? { urls: false };
    if (typeof body === "string" && !this.#object.blobs.hasBlobs) return result;
    // A kept context holding references may be far larger once they are answered: it is streamed.
    const stream = typeof body === "string" ? textStream(slices(body)) : body;
    return capture(async () => ({
      ...answer,
      body: await this.#object.blobs.rehydrateStream(stream, blobs),
    }));
  }
}

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

  /** `count` lines of the tree of the entries up to `bound` from the line in position `from` (see `SessionReads.treeLines`). */
  treeLines(from: number, count: number, bound?: number): Promise<Result<TreeLinesPage>> {
    return this.#calls.run((session) => session.reads.treeLines(from, count, bound));
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
