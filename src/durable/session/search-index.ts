import type { PlannedWrite } from "../../core/append";
import type { SessionEntry } from "../../core/entries";
import type { SessionStats } from "../../core/info";
import type {
  HeaderMatch,
  SearchCursor,
  SearchHit,
  SessionSearchOptions,
  SessionSearchPage,
} from "../../core/search";
import { DEFAULT_SEARCH_HITS, decodeSearchCursor, encodeSearchCursor } from "../../core/search";
import { ftsQuery } from "../../core/search-query";
import { entrySearchText, headerSearchText, readSnippet } from "../../core/search-text";
import type { SessionHeader } from "../../core/session-schemas";
import type { Sql } from "../sql";
import { jsonRuns, matchRows } from "../sql";
import type { SearchDigest } from "../types";
import type { EntryRows } from "./entry-rows";
import type { PathReads } from "./path-reads";

/*
 * Full-text search of one session: an FTS5 table (`entry_text`, rowid = the entry's seq) written in
 * the same transaction as the entries (a large batch: right after, and a search indexes what is
 * pending, for a bounded time, before it looks), so what an append wrote is found as soon as it
 * is answered, and a rolled-back write leaves nothing behind. Deleting the session's storage drops
 * it with the rest. The header's name and system prompt have rows of their own, below every seq
 * (`HEADER_ROWS`), written with the header and matched apart from the entries. It also gives the
 * tenant's directory a bounded digest of the session's text to search.
 */

/** Rows one multi-row INSERT writes. */
const INSERT_BATCH = 500;
/**
 * Entries a write indexes in its own transaction. A larger batch (a bulk load, an import, a
 * fork's copy) is indexed just after, a step at a time, so writing it costs what writing rows
 * costs; a search first indexes what is still pending, for a bounded time
 * (`SEARCH_INDEX_BUDGET_MS`), and says when some still waits.
 */
const INLINE_ENTRIES = 64;
/** Words around a match in a snippet. */
const SNIPPET_WORDS = 16;
/** Entries a step of indexing a session written before the index existed reads. */
const BACKFILL_BATCH = 1000;

/*
 * What a session tells its directory shard to search: its labels, and of its message text the
 * beginning and the most recent part. The directory holds every session's digest, so each is
 * bounded; a session's whole text is searched in the session itself.
 */
const DIGEST_LABEL_CHARS = 2000;
const DIGEST_HEAD_CHARS = 2000;
const DIGEST_TAIL_CHARS = 6000;
/** Entry types whose text is conversation (labels and names reach the directory apart). */
const DIGEST_TYPES = ["message", "custom_message", "custom", "compaction", "branch_summary"];

/**
 * UTF-8 bytes at the start or end of a text that hold at least its first or last `chars` UTF-16
 * units, whatever character the cut splits (a unit is at most three bytes, a character at most
 * four). Texts are cut as bytes, as SQLite's substr counts a text's characters only up to a U+0000.
 */
const digestBytes = (chars: number) => 3 * chars + 3;
/** Decodes a cut text: a character the cut split becomes U+FFFD beyond the units kept; a BOM stays. */
const UTF8 = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/**
 * The rows that hold the header's text, below every entry's seq (seqs start at 1): a search of the
 * entries reads rows above 0 only.
 */
const HEADER_ROWS = { name: 0, systemPrompt: -1 } as const satisfies Record<HeaderMatch["field"], number>;

/** The row of a hit's entry: what a hit tells of it, and where it lies. */
type HitEntry = { seq: number; id: string; type: string; role: string | null; depth: number | null };

export class SearchIndex {
  readonly #storage: SqlStorage;
  readonly #sql: Sql;
  readonly #rows: EntryRows;
  readonly #paths: PathReads;

  constructor(storage: SqlStorage, sql: Sql, rows: EntryRows, paths: PathReads) {
    this.#storage = storage;
    this.#sql = sql;
    this.#rows = rows;
    this.#paths = paths;
  }

  /**
   * Indexes entries being written (inside the caller's transaction), or, for a large batch or
   * while indexing is pending anyway, adds them to what is pending (which stays one range of seqs).
   */
  index(writes: readonly PlannedWrite[]): void {
    // The session's name is the entry's from now on (core's `sessionInfo`), found as that entry.
    if (writes.some((write) => write.entry.type === "session_info"))
      this.#writeHeaderRow(HEADER_ROWS.name, "");
    const first = writes[0]?.entry.seq;
    const last = writes[writes.length - 1]?.entry.seq;
    if (first === undefined || last === undefined) return;
    if (this.backfillPending || writes.length > INLINE_ENTRIES) this.markPending(first, last);
    else this.#insert(writes.map((write) => write.entry));
  }

  /**
   * Indexes the header's name (while no `session_info` entry has named the session) and system
   * prompt, in place of what their rows held (inside the caller's transaction).
   */
  indexHeader(header: SessionHeader, stats: SessionStats): void {
    const text = headerSearchText(header, stats.entryName !== undefined);
    this.#writeHeaderRow(HEADER_ROWS.name, text.name);
    this.#writeHeaderRow(HEADER_ROWS.systemPrompt, text.systemPrompt);
  }

  /** One of `HEADER_ROWS`, holding `text` (none when blank). */
  #writeHeaderRow(row: number, text: string): void {
    this.#sql`DELETE FROM entry_text WHERE rowid = CAST(${row} AS INTEGER)`;
    if (text) this.#sql`INSERT INTO entry_text (rowid, text, thinking) VALUES (${row}, ${text}, '')`;
  }

  /** Adds the seqs `first` to `last`, just written, to what is to be indexed (one range of seqs). */
  markPending(first: number, last: number): void {
    const pending = this.#backfill();
    if (pending) this.#sql`UPDATE search_backfill SET end_seq = ${Math.max(pending.end, last + 1)}`;
    else
      this.#sql`INSERT INTO search_backfill (singleton, next_seq, end_seq) VALUES (1, ${first}, ${last + 1})`;
  }

  /** Indexes entries; one indexed before (a part of the session indexed again) has its row replaced. */
  #insert(entries: readonly (SessionEntry & { seq: number })[]): void {
    const rows: [number, string, string][] = [];
    for (const entry of entries) {
      const text = entrySearchText(entry);
      if (text) rows.push([entry.seq, text.text, text.thinking]);
    }
    const insertRow = ([seq, text, thinking]: [number, string, string]) =>
      this
        .#sql`INSERT OR REPLACE INTO entry_text (rowid, text, thinking) VALUES (${seq}, ${text}, ${thinking})`;
    if (rows.length < 8) {
      for (const row of rows) insertRow(row);
      return;
    }
    for (const run of jsonRuns(rows, INSERT_BATCH)) {
      if ("row" in run) insertRow(run.row);
      else {
        this.#storage.exec(
          "INSERT OR REPLACE INTO entry_text (rowid, text, thinking) SELECT value->>0, value->>1, value->>2 FROM json_each(?)",
          run.json,
        );
      }
    }
  }

  /** The session's entries matching a query, newest first or best first, a page at a time. */
  search(options: SessionSearchOptions, leafId: string | null): SessionSearchPage {
    const limit = options.limit ?? DEFAULT_SEARCH_HITS;
    const order = options.order ?? "newest";
    const match = ftsQuery(options.q, options.thinking ? undefined : ["text"]);
    const cursor = options.cursor ? decodeSearchCursor(options.cursor, order) : undefined;
    const page = order === "rank" ? this.#byRank(match, limit, cursor) : this.#newest(match, limit, cursor);
    const hits = this.#hits(match, page.seqs, leafId);
    const header = cursor ? [] : this.#headerMatches(match);
    return { hits, ...(header.length > 0 ? { header } : {}), nextCursor: page.nextCursor };
  }

  /** The header's name and system prompt, those that match, in that order. */
  #headerMatches(match: string): HeaderMatch[] {
    const matches: HeaderMatch[] = [];
    for (const row of matchRows(
      () => this.#sql<{ row: number; text: string }>`
        SELECT rowid AS row, snippet(entry_text, 0, char(1), char(2), '…', ${SNIPPET_WORDS}) AS text
        FROM entry_text WHERE entry_text MATCH ${match} AND rowid <= 0 ORDER BY rowid DESC`,
    )) {
      const field = row.row === HEADER_ROWS.name ? "name" : "systemPrompt";
      matches.push({ field, ...readSnippet(row.text) });
    }
    return matches;
  }

  /** A page of hits newest first, below the last hit of the page before. */
  #newest(
    match: string,
    limit: number,
    cursor: SearchCursor | undefined,
  ): { seqs: number[]; nextCursor: string | null } {
    const before = cursor && "before" in cursor ? cursor.before : Number.MAX_SAFE_INTEGER;
    const seqs = matchRows(
      () => this.#sql<{ seq: number }>`SELECT rowid AS seq FROM entry_text
        WHERE entry_text MATCH ${match} AND rowid > 0 AND rowid < ${before}
        ORDER BY rowid DESC LIMIT ${limit + 1}`,
    ).map((row) => row.seq);
    const last = seqs.length > limit ? seqs[limit - 1] : undefined;
    return {
      seqs: seqs.slice(0, limit),
      nextCursor: last === undefined ? null : encodeSearchCursor({ before: last }),
    };
  }

  /**
   * A page of hits best first, ties newest first, among the entries indexed when the first page was
   * read (`upTo`): new entries never push hits already ranked onto the next page. A page goes on
   * after the last hit of the one before by that hit's score now (bm25 weighs words by statistics
   * of the whole index, which a write changes), so a write between pages that moves every score
   * alike moves no hit across pages; its score then is used if it matches no more.
   */
  #byRank(
    match: string,
    limit: number,
    cursor: SearchCursor | undefined,
  ): { seqs: number[]; nextCursor: string | null } {
    const upTo = cursor && "upTo" in cursor ? cursor.upTo : this.#lastIndexed();
    type Ranked = { seq: number; score: number };
    let rows: Ranked[];
    if (cursor && "seq" in cursor) {
      const { seq, score } = cursor;
      // FTS5 reads a rowid it is given as a real number as no bound, and `rank = …` as naming a
      // ranking function: hence the CAST, and `+rank`, which SQLite compares itself.
      rows = matchRows(
        () => this.#sql<Ranked>`
          WITH anchor AS (SELECT coalesce(
            (SELECT rank FROM entry_text WHERE entry_text MATCH ${match} AND rowid = CAST(${seq} AS INTEGER)),
              ${score}) AS score)
          SELECT rowid AS seq, rank AS score FROM entry_text, anchor
          WHERE entry_text MATCH ${match} AND rowid > 0 AND rowid <= ${upTo}
            AND (+rank > anchor.score OR (+rank = anchor.score AND rowid < ${seq}))
          ORDER BY rank, rowid DESC LIMIT ${limit + 1}`,
      );
    } else {
      // No cursor, or one of the earlier form: an offset into the ranking.
      const offset = cursor && "offset" in cursor ? cursor.offset : 0;
      rows = matchRows(
        () => this.#sql<Ranked>`SELECT rowid AS seq, rank AS score FROM entry_text
          WHERE entry_text MATCH ${match} AND rowid > 0 AND rowid <= ${upTo}
          ORDER BY rank, rowid DESC LIMIT ${limit + 1} OFFSET ${offset}`,
      );
    }
    const last = rows.length > limit ? rows[limit - 1] : undefined;
    return {
      seqs: rows.slice(0, limit).map((row) => row.seq),
      nextCursor: last ? encodeSearchCursor({ upTo, score: last.score, seq: last.seq }) : null,
    };
  }

  /** The highest seq indexed (0 when none is). */
  #lastIndexed(): number {
    return (
      this.#sql<{ seq: number }>`SELECT rowid AS seq FROM entry_text ORDER BY rowid DESC LIMIT 1`.toArray()[0]
        ?.seq ?? 0
    );
  }

  /** Hits for matching seqs, in their order: the entry, its snippet, and whether it is on the branch. */
  #hits(match: string, seqs: readonly number[], leafId: string | null): SearchHit[] {
    if (seqs.length === 0) return [];
    const list = JSON.stringify(seqs);
    const snippets = new Map<number, { text: string; thinking: string }>();
    for (const row of matchRows(
      () => this.#sql<{ seq: number; text: string; thinking: string }>`
        SELECT rowid AS seq,
          snippet(entry_text, 0, char(1), char(2), '…', ${SNIPPET_WORDS}) AS text,
          snippet(entry_text, 1, char(1), char(2), '…', ${SNIPPET_WORDS}) AS thinking
        FROM entry_text WHERE entry_text MATCH ${match} AND rowid IN (SELECT value FROM json_each(${list}))`,
    )) {
      snippets.set(row.seq, { text: row.text, thinking: row.thinking });
    }
    const meta = new Map<number, HitEntry>();
    for (const row of this.#sql<HitEntry>`
      SELECT seq, id, type, role, depth FROM entries WHERE seq IN (SELECT value FROM json_each(${list}))`) {
      meta.set(row.seq, row);
    }
    const edits = this.#edits([...meta.values()].map((entry) => entry.id));
    const onBranch = this.#onBranch(leafId, [...meta.values(), ...edits]);
    // The latest edit of each entry on the branch (edits come in order of seq).
    const editedBy = new Map<string, string>();
    for (const edit of edits) if (onBranch.has(edit.seq)) editedBy.set(edit.target, edit.id);
    const hits: SearchHit[] = [];
    for (const seq of seqs) {
      const entry = meta.get(seq);
      const snippet = snippets.get(seq);
      if (!entry || !snippet) continue;
      const text = readSnippet(snippet.text);
      const thinking = readSnippet(snippet.thinking);
      const inThinking = text.highlights.length === 0 && thinking.highlights.length > 0;
      const shown = inThinking ? thinking : text;
      hits.push({
        entryId: entry.id,
        seq,
        type: entry.type as SearchHit["type"],
        ...(entry.role === null ? {} : { role: entry.role }),
        onBranch: onBranch.has(seq),
        ...(onBranch.has(seq) && editedBy.has(entry.id) ? { editedBy: editedBy.get(entry.id) } : {}),
        field: inThinking ? "thinking" : "text",
        snippet: shown.snippet,
        highlights: shown.highlights,
      });
    }
    return hits;
  }

  /**
   * Which of these entries (hits and their edits) lie on the path to the leaf: one walk up, no
   * deeper than the highest of them, keeping only them.
   */
  #onBranch(leafId: string | null, entries: readonly { seq: number; depth: number | null }[]): Set<number> {
    if (leafId === null) return new Set();
    const leaf = this.#rows.node(leafId);
    const depths = entries.map((entry) => entry.depth).filter((depth): depth is number => depth !== null);
    if (!leaf || depths.length === 0) return new Set();
    const seqs = entries.map((entry) => entry.seq);
    return this.#paths.onPath(leaf.seq, seqs, Math.min(...depths));
  }

  /** The context edits of the entries `ids`, in order of seq, each with the id it edits. */
  #edits(ids: readonly string[]): { seq: number; id: string; target: string; depth: number | null }[] {
    if (ids.length === 0) return [];
    return this.#sql<{ seq: number; id: string; target: string; depth: number | null }>`
      SELECT seq, id, edit_target AS target, depth FROM entries
      WHERE edit_target IN (SELECT value FROM json_each(${JSON.stringify(ids)}))
      ORDER BY seq`.toArray();
  }

  /**
   * The session's text as its directory shard searches it (see DIGEST_*). Each read takes only the
   * part of a text the digest can use (`digestBytes`), and is read to its end: a statement left
   * part-read stays open, holding its tables locked against a change of the schema, until it is
   * collected.
   */
  digest(): SearchDigest {
    const labels: string[] = [];
    let labelChars = 0;
    for (const row of this.#sql<{ label: ArrayBuffer }>`
      SELECT substr(CAST(label AS BLOB), 1, ${digestBytes(DIGEST_LABEL_CHARS)}) AS label
      FROM labels LIMIT 200`.toArray()) {
      if (labelChars >= DIGEST_LABEL_CHARS) break;
      const label = UTF8.decode(row.label).slice(0, DIGEST_LABEL_CHARS - labelChars);
      labels.push(label);
      labelChars += label.length + 1;
    }
    const types = JSON.stringify(DIGEST_TYPES);
    // CROSS JOIN keeps the texts the outer loop, read in rowid order, so each read stops at its
    // LIMIT; joined the other way SQLite read and sorted every entry of the session on every
    // report (600,000 rows at 100,000 entries; test/workers/turn-cost.test.ts).
    const tail: { seq: number; text: string }[] = [];
    let tailChars = 0;
    for (const row of this.#sql<{ seq: number; text: ArrayBuffer }>`
      SELECT t.rowid AS seq, substr(CAST(t.text AS BLOB), ${-digestBytes(DIGEST_TAIL_CHARS)}) AS text
      FROM entry_text t CROSS JOIN entries e ON e.seq = t.rowid
      WHERE e.type IN (SELECT value FROM json_each(${types})) AND t.text != ''
      ORDER BY t.rowid DESC LIMIT 100`.toArray()) {
      if (tailChars >= DIGEST_TAIL_CHARS) break;
      const text = UTF8.decode(row.text).slice(-(DIGEST_TAIL_CHARS - tailChars));
      tail.push({ seq: row.seq, text });
      tailChars += text.length + 1;
    }
    const inTail = new Set(tail.map((part) => part.seq));
    const head: string[] = [];
    let headChars = 0;
    for (const row of this.#sql<{ seq: number; text: ArrayBuffer }>`
      SELECT t.rowid AS seq, substr(CAST(t.text AS BLOB), 1, ${digestBytes(DIGEST_HEAD_CHARS)}) AS text
      FROM entry_text t CROSS JOIN entries e ON e.seq = t.rowid
      WHERE e.type IN (SELECT value FROM json_each(${types})) AND t.text != ''
      ORDER BY t.rowid LIMIT 20`.toArray()) {
      if (headChars >= DIGEST_HEAD_CHARS || inTail.has(row.seq)) break;
      const text = UTF8.decode(row.text).slice(0, DIGEST_HEAD_CHARS - headChars);
      head.push(text);
      headChars += text.length + 1;
    }
    const text = [...head, ...tail.reverse().map((part) => part.text)].join("\n");
    return { labels: labels.join("\n"), text };
  }

  /** Whether entries written before the index existed are still to be indexed. */
  get backfillPending(): boolean {
    return this.#backfill() !== undefined;
  }

  #backfill(): { next: number; end: number } | undefined {
    const row = this.#sql<{ next_seq: number; end_seq: number }>`
      SELECT next_seq, end_seq FROM search_backfill`.toArray()[0];
    return row && { next: row.next_seq, end: row.end_seq };
  }

  /**
   * Indexes one bounded step of what was written before the index existed (inside the caller's
   * transaction); true when more remain.
   */
  backfillStep(): boolean {
    const pending = this.#backfill();
    if (!pending) return false;
    const seqs = this.#sql<{ seq: number }>`SELECT seq FROM entries
      WHERE seq >= ${pending.next} AND seq < ${pending.end} ORDER BY seq LIMIT ${BACKFILL_BATCH}`
      .toArray()
      .map((row) => row.seq);
    const page = seqs.length > 0 ? this.#rows.page(seqs) : { entries: [], rest: [] };
    const last = page.entries[page.entries.length - 1]?.seq;
    const next = last === undefined ? pending.end : last + 1;
    this.#insert(page.entries);
    if (next >= pending.end) this.#sql`DELETE FROM search_backfill`;
    else this.#sql`UPDATE search_backfill SET next_seq = ${next}`;
    return next < pending.end;
  }
}
