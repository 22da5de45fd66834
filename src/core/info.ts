import type { SessionEntry } from "./entries";
import { SessionError } from "./errors";
import { PREVIEW_CHARS } from "./limits";
import { contentText } from "./messages";
import type { ListOptions, SessionHeader, SessionInfo, SessionPage } from "./session-schemas";

/** Blank (absent or whitespace-only) labels and names clear. */
export function nonBlank(value: string | undefined): string | undefined {
  return value?.trim() ? value : undefined;
}

/**
 * The running figures of a session that `SessionInfo` shows, kept up to date entry by entry so no
 * backend has to rescan its history to answer.
 */
export interface SessionStats {
  entryCount: number;
  messageCount: number;
  /**
   * UTF-8 bytes of the session's header's JSON as stored (`headerBytes`), of every stored entry's
   * JSON, `leaf` records included, and of the chunks of the session's generations while their
   * streams are kept: what quotas count.
   */
  bytes: number;
  /**
   * Of `bytes`, those of the header's JSON as stored (its id, name, system prompt, metadata and the
   * rest). Absent in a session stored before its header counted: counted when it is next read.
   */
  headerBytes?: number;
  /** Of `bytes`, those of values a service stores apart, as blobs (its own storage holds the rest). */
  blobBytes?: number;
  preview?: string;
  /** Set once a `session_info` entry exists: from then on the name comes from entries. */
  entryName?: { name?: string };
  updatedAt: string;
}

/** UTF-8 bytes of a session's header's JSON as stored: what its header counts in its `bytes`. */
export function headerBytes(header: SessionHeader): number {
  return new TextEncoder().encode(JSON.stringify(header)).byteLength;
}

/** The figures of a session holding no entries: its header's bytes alone. */
export function emptyStats(header: SessionHeader): SessionStats {
  const bytes = headerBytes(header);
  return { entryCount: 0, messageCount: 0, bytes, headerBytes: bytes, updatedAt: header.createdAt };
}

/** Counts `header` in place of the header the figures counted (none, for a session stored before). */
export function countHeader(stats: SessionStats, header: SessionHeader): void {
  const bytes = headerBytes(header);
  stats.bytes = Math.max(0, stats.bytes - (stats.headerBytes ?? 0) + bytes);
  stats.headerBytes = bytes;
}

/** Counts one stored entry; `bytes` is the length of its JSON as stored. */
export function applyEntryToStats(stats: SessionStats, entry: SessionEntry, bytes: number): void {
  stats.bytes += bytes;
  if (entry.type === "leaf") return;
  stats.entryCount++;
  if (entry.type === "message") {
    stats.messageCount++;
    if (stats.preview === undefined && entry.message.role === "user") {
      const text = contentText(entry.message.content);
      if (text) stats.preview = text.slice(0, PREVIEW_CHARS);
    }
  } else if (entry.type === "session_info") {
    const name = nonBlank(entry.name);
    stats.entryName = name === undefined ? {} : { name };
  }
}

export function sessionInfo(header: SessionHeader, stats: SessionStats, leafId: string | null): SessionInfo {
  const info: SessionInfo = {
    id: header.id,
    metadata: header.metadata,
    createdAt: header.createdAt,
    updatedAt: stats.updatedAt,
    leafId,
    entryCount: stats.entryCount,
    messageCount: stats.messageCount,
    bytes: stats.bytes,
  };
  const name = stats.entryName ? stats.entryName.name : nonBlank(header.name);
  if (name !== undefined) info.name = name;
  if (header.systemPrompt !== undefined) info.systemPrompt = header.systemPrompt;
  if (header.parentSession) info.parentSession = header.parentSession;
  if (stats.preview !== undefined) info.preview = stats.preview;
  if (stats.blobBytes) info.blobBytes = stats.blobBytes;
  if (header.autoCompact) info.autoCompact = { ...header.autoCompact };
  if (header.expiresAt !== undefined) info.expiresAt = header.expiresAt;
  return info;
}

/*
 * Session listing: newest first by `updatedAt` or `createdAt`, ties broken by id. The cursor is
 * the sort key of the last session returned, with the order and filters of the listing it
 * continues, opaque to callers.
 */

export type ListOrder = "updated" | "created";

/** What a listing's cursor is valid for: its order and filters. */
export type ListScope = Pick<ListOptions, "order" | "prefix" | "project">;

export function sortKey(info: Pick<SessionInfo, "updatedAt" | "createdAt">, order: ListOrder): string {
  return order === "updated" ? info.updatedAt : info.createdAt;
}

/** A cursor: base64url of the UTF-8 JSON of its values, so any text fits. */
export function encodeCursor(...values: Array<string | null>): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(JSON.stringify(values))) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The values of a cursor `encodeCursor` made; `invalid_request` for anything else. */
export function cursorValues(cursor: string): Array<string | null> {
  try {
    const binary = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
    const bytes = Uint8Array.from(binary, (char) => char.charCodeAt(0));
    const value: unknown = JSON.parse(
      new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes),
    );
    if (Array.isArray(value) && value.every((item) => typeof item === "string" || item === null)) {
      return value;
    }
  } catch {
    // fall through to the error below
  }
  throw new SessionError("invalid_request", "invalid cursor", { cursor });
}

/** A cursor of two strings: a kind or sort key, and what to go on after. */
export function decodeCursor(cursor: string): { key: string; id: string } {
  const [key, id, ...rest] = cursorValues(cursor);
  if (typeof key === "string" && typeof id === "string" && rest.length === 0) return { key, id };
  throw new SessionError("invalid_request", "invalid cursor", { cursor });
}

function scopeValues(scope: ListScope): Array<string | null> {
  return [scope.order ?? "updated", scope.prefix ?? "", scope.project ?? null];
}

/** The cursor of a listing page whose last session has this sort key and id. */
export function listCursor(scope: ListScope, key: string, id: string): string {
  return encodeCursor(key, id, ...scopeValues(scope));
}

/**
 * Where a listing goes on from `cursor`. A cursor of another listing (another order or filters, or
 * no session listing at all) is `invalid_request`: its place in this one would skip or repeat
 * sessions.
 */
export function listedAfter(cursor: string, scope: ListScope): { key: string; id: string } {
  const [key, id, ...rest] = cursorValues(cursor);
  if (
    typeof key === "string" &&
    typeof id === "string" &&
    JSON.stringify(rest) === JSON.stringify(scopeValues(scope))
  ) {
    return { key, id };
  }
  throw new SessionError(
    "invalid_request",
    "the cursor is not of this listing (a cursor goes on only with the order and filters it came with)",
    { cursor },
  );
}

/** One page of an in-memory list (memory and JSONL repos). */
export function pageSessions(
  infos: readonly SessionInfo[],
  options: ListOptions & { limit: number },
): SessionPage {
  const order = options.order ?? "updated";
  const cursor = options.cursor ? listedAfter(options.cursor, options) : undefined;
  const sorted = infos
    .map((info) => ({ info, key: sortKey(info, order) }))
    // Newest first: what sorts after the cursor is older, or as old with a smaller id.
    .filter(({ info, key }) => !cursor || key < cursor.key || (key === cursor.key && info.id < cursor.id))
    .sort((a, b) => (a.key === b.key ? (a.info.id < b.info.id ? 1 : -1) : a.key < b.key ? 1 : -1));
  const page = sorted.slice(0, options.limit);
  const last = page[page.length - 1];
  const nextCursor =
    sorted.length > options.limit && last ? listCursor(options, last.key, last.info.id) : null;
  return { sessions: page.map(({ info }) => info), nextCursor };
}

/** Keeps `labels` (target id → label) current as entries are appended in order. */
export function applyEntryToLabels(labels: Map<string, string>, entry: SessionEntry): void {
  if (entry.type !== "label") return;
  const label = nonBlank(entry.label);
  if (label === undefined) labels.delete(entry.targetId);
  else labels.set(entry.targetId, label);
}
