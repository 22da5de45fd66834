import type { z } from "zod";
import { checkEditTarget } from "./context-edits";
import type { EntryInput, EntryType, LeafEntry, SessionEntry, StoredEntry } from "./entries";
import { SessionEntry as SessionEntrySchema } from "./entries";
import { SessionError } from "./errors";
import { newId, nowIso } from "./ids";
import { assertJsonDepth, canonicalJson, utf8Length } from "./json";
import { MAX_BATCH_ENTRIES, MAX_ENTRY_BYTES } from "./limits";
import { AppendEntryInput } from "./providers/entry-input";
import type { Conversation } from "./providers/provider-entries";
import { expandProviderEntries } from "./providers/provider-entries";
import type { Position } from "./session-schemas";

/*
 * The append rules, written once: a parent defaults to the leaf, an explicit one must exist, a
 * batch is atomic, a known id with the same content is a replay and with other content a
 * conflict, `If-Match` is checked after replays, labels need a target, a compaction's kept
 * entry must be on its branch, and a context edit's target too (`checkEditTarget`). A backend describes what it holds through an
 * `AppendView`, gets back a plan (the entries to write, with their seq, and the new leaf) or a
 * `SessionError`, and then writes the plan in one transaction. Nothing is written on error.
 */

export interface EntryRef {
  type: EntryType;
  parentId: string | null;
}

export interface AppendView {
  readonly leafId: string | null;
  /** The seq the next written entry gets. */
  readonly nextSeq: number;
  /** Type and parent of an entry, without its payload. */
  ref(id: string): EntryRef | undefined;
  /** The whole stored entry (for replay comparison and `position: "before"`). */
  load(id: string): StoredEntry | undefined;
  /**
   * Whether the stored entry `ancestorId` is the stored entry `fromId` or one of its ancestors
   * (false when either names none): what a context edit's target and a compaction's first kept
   * entry are checked with, however deep the branch.
   */
  onPath(ancestorId: string, fromId: string): boolean;
  /**
   * The conversation a provider's message appended under `entryId` continues (its last turn and
   * its model); none for an id that names no entry. Asked only of batches holding one.
   */
  conversationAt(entryId: string): Conversation;
}

/** The ids a batch names (its own, parents, label and edit targets, kept entries): what a view is asked about. */
export function idsNamedBy(inputs: readonly unknown[]): string[] {
  const named = new Set<string>();
  for (const input of inputs) {
    if (!input || typeof input !== "object") continue;
    for (const key of ["id", "parentId", "targetId", "firstKeptEntryId"]) {
      const value = (input as Record<string, unknown>)[key];
      if (typeof value === "string") named.add(value);
    }
  }
  return [...named];
}

export interface PlannedWrite {
  entry: StoredEntry;
  /** `entry` serialized without `seq`, as it is stored. */
  json: string;
  /** UTF-8 length of `json`. */
  bytes: number;
}

export interface AppendPlan {
  /** One per input, in order: the stored form of new entries and of replays. */
  entries: StoredEntry[];
  writes: PlannedWrite[];
  /** The leaf once the writes are applied (unchanged when there are none). */
  leafId: string | null;
}

export interface PlanOptions {
  expectedLeafId?: string | null;
  /** The inputs already passed `EntryInput` validation (the HTTP edge does it). */
  validated?: boolean;
  /** The head stays where it is: the entries are written as a branch beside it. */
  keepLeaf?: boolean;
}

/** Issues of a zod failure, as sent in `details` of `invalid_request`. */
export function zodDetails(error: z.ZodError, prefix: ReadonlyArray<string | number> = []) {
  return error.issues.map((issue) => ({
    path: [...prefix, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))],
    code: issue.code,
    message: issue.message,
  }));
}

class Overlay {
  readonly pending = new Map<string, StoredEntry>();
  constructor(readonly view: AppendView) {}

  ref(id: string): EntryRef | undefined {
    return this.pending.get(id) ?? this.view.ref(id);
  }

  load(id: string): StoredEntry | undefined {
    return this.pending.get(id) ?? this.view.load(id);
  }

  /**
   * Whether `ancestorId` is `fromId` or one of its ancestors: the batch's own entries are walked
   * here, and from the first stored one the view answers (no stored entry has a pending ancestor).
   */
  onPath(ancestorId: string, fromId: string | null): boolean {
    for (let current = fromId; current !== null; ) {
      if (current === ancestorId) return true;
      const pending = this.pending.get(current);
      if (!pending) return !this.pending.has(ancestorId) && this.view.onPath(ancestorId, current);
      current = pending.parentId;
    }
    return false;
  }
}

function serialize(entry: SessionEntry, checked = false): { json: string; bytes: number } {
  // Checked input (the router checks whole bodies) needs no second walk.
  if (!checked) assertJsonDepth(entry);
  const json = JSON.stringify(entry);
  const bytes = utf8Length(json);
  if (bytes > MAX_ENTRY_BYTES) {
    throw new SessionError(
      "entry_too_large",
      `entry ${entry.id} is ${bytes} bytes serialized; the limit is ${MAX_ENTRY_BYTES}`,
      { id: entry.id, bytes, limit: MAX_ENTRY_BYTES },
    );
  }
  return { json, bytes };
}

/** The entry with its base fields first, in the order every backend stores them. */
function normalize(
  fields: Record<string, unknown>,
  id: string,
  parentId: string | null,
  timestamp: string,
): SessionEntry {
  const { type, id: _id, parentId: _parentId, timestamp: _timestamp, seq: _seq, ...rest } = fields;
  return { type, id, parentId, timestamp, ...rest } as SessionEntry;
}

/** A retry is a replay when what it sent equals what is stored, ignoring what it left out. */
export function isReplay(sent: Record<string, unknown>, stored: StoredEntry): boolean {
  const ignored = new Set([
    "id",
    "seq",
    ...["parentId", "timestamp"].filter((key) => sent[key] === undefined),
  ]);
  const compared = (entry: object) =>
    canonicalJson(Object.fromEntries(Object.entries(entry).filter(([key]) => !ignored.has(key))));
  return compared(sent) === compared(stored);
}

function checkBatchSize(count: number): void {
  if (count === 0) throw new SessionError("invalid_request", "no entries to append");
  if (count > MAX_BATCH_ENTRIES) {
    throw new SessionError("payload_too_large", `a batch holds at most ${MAX_BATCH_ENTRIES} entries`, {
      count,
      limit: MAX_BATCH_ENTRIES,
    });
  }
}

/** Refuses an input `schema` does not read (an entry, a provider's message), naming where it is wrong. */
function checkInput(schema: z.ZodType, raw: unknown, prefix: readonly number[]): void {
  assertJsonDepth(raw);
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw new SessionError("invalid_request", "invalid entry", zodDetails(parsed.error, prefix));
  }
}

export function planAppend(raw: readonly unknown[], view: AppendView, options: PlanOptions = {}): AppendPlan {
  checkBatchSize(raw.length);
  if (!options.validated) {
    for (const [index, input] of raw.entries())
      checkInput(AppendEntryInput, input, raw.length > 1 ? [index] : []);
  }
  // A provider's message stands for the message entries it converts to, each read against the
  // conversation at its parent (stored, or made by the batch's entries before it).
  const inputs = expandProviderEntries(raw, view) as ReadonlyArray<Record<string, unknown> & EntryInput>;
  const overlay = new Overlay(view);
  const entries: StoredEntry[] = [];
  const writes: PlannedWrite[] = [];
  let previous = view.leafId;
  let seq = view.nextSeq;
  // Entries of one batch are appended at one time.
  const now = nowIso();

  inputs.forEach((input) => {
    if (input.id !== undefined) {
      const existing = overlay.load(input.id);
      if (existing) {
        if (!isReplay(input, existing)) {
          const message = `entry ${input.id} already exists with different content`;
          throw new SessionError("already_exists", message, { id: input.id });
        }
        entries.push(existing);
        previous = existing.id;
        return;
      }
    }

    const id = input.id ?? newId();
    const parentId = input.parentId === undefined ? previous : input.parentId;
    if (parentId !== null) {
      const parent = overlay.ref(parentId);
      if (!parent || parent.type === "leaf") {
        throw new SessionError("parent_not_found", `parent ${parentId} does not exist`, { parentId });
      }
    }
    if (input.type === "label") {
      const target = overlay.ref(input.targetId);
      if (!target || target.type === "leaf") {
        throw new SessionError("invalid_tree", `label target ${input.targetId} does not exist`, {
          targetId: input.targetId,
        });
      }
    }
    if (input.type === "context_edit") checkEditTarget(input.targetId, parentId, overlay);
    // A compaction naming itself keeps nothing before it (pi 1.6).
    if (
      input.type === "compaction" &&
      input.firstKeptEntryId !== undefined &&
      input.firstKeptEntryId !== id
    ) {
      if (!overlay.onPath(input.firstKeptEntryId, parentId)) {
        throw new SessionError(
          "invalid_tree",
          `firstKeptEntryId ${input.firstKeptEntryId} is not on the branch the compaction is appended to`,
          { firstKeptEntryId: input.firstKeptEntryId },
        );
      }
    }

    const entry = normalize(input, id, parentId, input.timestamp ?? now);
    const stored = { ...entry, seq: seq++ } as StoredEntry;
    overlay.pending.set(id, stored);
    writes.push({ entry: stored, ...serialize(entry, options.validated) });
    entries.push(stored);
    previous = id;
  });

  if (writes.length === 0) return { entries, writes, leafId: view.leafId };
  checkExpectedLeaf(view, options.expectedLeafId);
  return { entries, writes, leafId: options.keepLeaf ? view.leafId : previous };
}

export function checkExpectedLeaf(
  view: { leafId: string | null },
  expected: string | null | undefined,
): void {
  if (expected !== undefined && expected !== view.leafId) {
    throw new SessionError("leaf_conflict", "the leaf has moved", { expected, actual: view.leafId });
  }
}

/**
 * Where `position` puts the head for a target: the target itself, or for
 * `before` on a user message its parent. `target` is the loaded entry (undefined if missing).
 */
export function headFor(
  targetId: string | null,
  target: StoredEntry | undefined,
  position?: Position,
): string | null {
  if (targetId === null) {
    if (position === "before") throw new SessionError("invalid_request", 'position "before" needs a target');
    return null;
  }
  if (!target || target.type === "leaf") {
    throw new SessionError("not_found", `entry ${targetId} does not exist`, { id: targetId });
  }
  if (position !== "before") return targetId;
  if (target.type !== "message" || target.message.role !== "user") {
    throw new SessionError("invalid_request", 'position "before" applies to user messages only', {
      id: targetId,
    });
  }
  return target.parentId;
}

export interface LeafPlan {
  write: PlannedWrite & { entry: StoredEntry<LeafEntry> };
  leafId: string | null;
}

export function planLeafMove(
  targetId: string | null,
  view: AppendView,
  options: { position?: Position; expectedLeafId?: string | null } = {},
): LeafPlan {
  const leafId = headFor(targetId, targetId === null ? undefined : view.load(targetId), options.position);
  checkExpectedLeaf(view, options.expectedLeafId);
  const entry: LeafEntry = {
    type: "leaf",
    id: newId(),
    parentId: null,
    timestamp: nowIso(),
    targetId: leafId,
  };
  const stored = { ...entry, seq: view.nextSeq };
  const json = JSON.stringify(entry);
  return { write: { entry: stored, json, bytes: utf8Length(json) }, leafId };
}

/**
 * Plans a verbatim copy (fork, import): ids, parents, timestamps and `leaf` records as given.
 * Ids must be new and parents must exist; label targets and compaction ranges are not checked,
 * since what pi writes and what a fork copies may point off the copied path.
 */
export function planImport(
  inputs: readonly unknown[],
  view: AppendView,
  options: Pick<PlanOptions, "validated"> = {},
): AppendPlan {
  const overlay = new Overlay(view);
  const writes: PlannedWrite[] = [];
  let leafId = view.leafId;
  let seq = view.nextSeq;
  inputs.forEach((raw, index) => {
    if (!options.validated) checkInput(SessionEntrySchema, raw, [index]);
    const input = raw as SessionEntry;
    if (overlay.ref(input.id)) {
      throw new SessionError("already_exists", `entry ${input.id} appears twice`, { id: input.id, index });
    }
    const pointsAt = input.type === "leaf" ? input.targetId : input.parentId;
    if (pointsAt !== null) {
      const parent = overlay.ref(pointsAt);
      if (!parent || parent.type === "leaf") {
        const code = input.type === "leaf" ? "invalid_tree" : "parent_not_found";
        throw new SessionError(code, `entry ${input.id} points at ${pointsAt}, which does not exist`, {
          id: input.id,
          missing: pointsAt,
          index,
        });
      }
    }
    const entry = normalize(input, input.id, input.parentId, input.timestamp);
    const stored = { ...entry, seq: seq++ } as StoredEntry;
    overlay.pending.set(input.id, stored);
    writes.push({ entry: stored, ...serialize(entry, options.validated) });
    leafId = input.type === "leaf" ? input.targetId : input.id;
  });
  return { entries: writes.map((w) => w.entry), writes, leafId };
}
