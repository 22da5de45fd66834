import type { EntryRef } from "../core/append";
import type { SessionEntry } from "../core/entries";
import { ENTRY_TYPES } from "../core/entries";
import { isValidId } from "../core/ids";
import type { SessionStats } from "../core/info";
import { applyEntryToLabels, applyEntryToStats, emptyStats } from "../core/info";
import { isRecord } from "../core/providers/incoming";
import type { SessionHeader } from "../core/session-schemas";
import type { LineSpan } from "./entry-log";

/**
 * What the storage keeps in memory per entry: type, parent, seq and where its line is; never the
 * payload. Lines are read back by position when an entry is asked for, so memory grows with the
 * number of entries (tens of bytes each) and not with their size (up to 16 MiB each: a session of
 * base64 screenshots would not fit in memory if lines were kept, as `MemoryStorage` keeps them).
 */
export interface IndexedEntry extends EntryRef, LineSpan {
  seq: number;
}

const TYPES: ReadonlySet<string> = new Set(ENTRY_TYPES);

/** A session's entries by id and by seq, with the labels and figures that follow from them. */
export class EntryIndex {
  /** Entry with seq `n` at `n - 1`. */
  readonly rows: IndexedEntry[] = [];
  readonly labels = new Map<string, string>();
  readonly stats: SessionStats;
  /** The head as the log alone tells it: the last `leaf` record's target, or the last entry. */
  logLeafId: string | null = null;
  readonly #byId = new Map<string, IndexedEntry>();

  constructor(header: SessionHeader) {
    this.stats = emptyStats(header);
  }

  get nextSeq(): number {
    return this.rows.length + 1;
  }

  get(id: string): IndexedEntry | undefined {
    return this.#byId.get(id);
  }

  add(entry: SessionEntry, span: LineSpan): IndexedEntry {
    const row: IndexedEntry = {
      type: entry.type,
      parentId: entry.parentId,
      seq: this.nextSeq,
      offset: span.offset,
      length: span.length,
    };
    this.rows.push(row);
    this.#byId.set(entry.id, row);
    applyEntryToLabels(this.labels, entry);
    applyEntryToStats(this.stats, entry, span.length);
    this.logLeafId = entry.type === "leaf" ? entry.targetId : entry.id;
    return row;
  }

  /**
   * Why a line read back from disk cannot be the next entry, or undefined when it can. Only what
   * the index and the figures rely on is checked: payloads were validated when they were
   * appended, and checking every line against the full schema would make opening a
   * million-entry session take seconds.
   */
  problem(value: unknown): string | undefined {
    if (!isRecord(value)) return "not a JSON object";
    const { type, id, parentId, timestamp } = value;
    if (typeof type !== "string" || !TYPES.has(type)) return `unknown entry type ${JSON.stringify(type)}`;
    if (!isValidId(id)) return "missing or invalid id";
    if (this.#byId.has(id)) return `entry ${id} appears twice`;
    if (typeof timestamp !== "string") return "missing timestamp";
    if (parentId !== null) {
      if (!isValidId(parentId)) return "missing or invalid parentId";
      const parent = this.#byId.get(parentId);
      if (!parent || parent.type === "leaf") return `parent ${parentId} is not an earlier entry`;
    }
    switch (type) {
      case "leaf": {
        const { targetId } = value;
        if (parentId !== null) return "a leaf record has a parent";
        if (targetId === null) return undefined;
        if (!isValidId(targetId)) return "missing or invalid targetId";
        const target = this.#byId.get(targetId);
        return target && target.type !== "leaf"
          ? undefined
          : `leaf target ${targetId} is not an earlier entry`;
      }
      case "message":
        return isRecord(value.message) && typeof value.message.role === "string"
          ? undefined
          : "missing message";
      case "label":
        if (typeof value.targetId !== "string") return "missing targetId";
        return value.label === undefined || typeof value.label === "string" ? undefined : "invalid label";
      case "session_info":
        return value.name === undefined || typeof value.name === "string" ? undefined : "invalid name";
      default:
        return undefined;
    }
  }
}
