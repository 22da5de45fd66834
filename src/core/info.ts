import type { SessionEntry } from "./entries";
import { SessionError } from "./errors";
import { PREVIEW_CHARS } from "./limits";
import { contentText } from "./messages";
import type { SessionHeader, SessionInfo, SessionPage } from "./session-schemas";

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
   * UTF-8 bytes of every stored entry's JSON, `leaf` records included, and of the chunks of the
   * session's generations while their streams are kept: what quotas count.
   */
  bytes: number;
  /** Of `bytes`, those of values a service stores apart, as blobs (its own storage holds the rest). */
  blobBytes?: number;
  preview?: string;
  /** Set once a `session_info` entry exists: from then on the name comes from entries. */
  entryName?: { name?: string };
  updatedAt: string;
}

export function emptyStats(createdAt: string): SessionStats {
  return { entryCount: 0, messageCount: 0, bytes: 0, updatedAt: createdAt };
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
 * the sort key of the last session returned, opaque to callers.
 */

export type ListOrder = "updated" | "created";

export function sortKey(info: Pick<SessionInfo, "updatedAt" | "createdAt">, order: ListOrder): string {
  return order === "updated" ? info.updatedAt : info.createdAt;
}

/** A listing's cursor: base64url of the UTF-8 JSON of its sort key and id, so any text fits. */
export function encodeCursor(key: string, id: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(JSON.stringify([key, id]))) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function decodeCursor(cursor: string): { key: string; id: string } {
  try {
    const binary = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
    const bytes = Uint8Array.from(binary, (char) => char.charCodeAt(0));
    const value: unknown = JSON.parse(
      new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes),
    );
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === "string" &&
      typeof value[1] === "string"
    ) {
      return { key: value[0], id: value[1] };
    }
  } catch {
    // fall through to the error below
  }
  throw new SessionError("invalid_request", "invalid cursor", { cursor });
}

/** One page of an in-memory list (memory and JSONL repos). */
export function pageSessions(
  infos: readonly SessionInfo[],
  options: { limit: number; cursor?: string | null; order: ListOrder },
): SessionPage {
  const cursor = options.cursor ? decodeCursor(options.cursor) : undefined;
  const sorted = infos
    .map((info) => ({ info, key: sortKey(info, options.order) }))
    // Newest first: what sorts after the cursor is older, or as old with a smaller id.
    .filter(({ info, key }) => !cursor || key < cursor.key || (key === cursor.key && info.id < cursor.id))
    .sort((a, b) => (a.key === b.key ? (a.info.id < b.info.id ? 1 : -1) : a.key < b.key ? 1 : -1));
  const page = sorted.slice(0, options.limit);
  const last = page[page.length - 1];
  const nextCursor = sorted.length > options.limit && last ? encodeCursor(last.key, last.info.id) : null;
  return { sessions: page.map(({ info }) => info), nextCursor };
}

/** Keeps `labels` (target id → label) current as entries are appended in order. */
export function applyEntryToLabels(labels: Map<string, string>, entry: SessionEntry): void {
  if (entry.type !== "label") return;
  const label = nonBlank(entry.label);
  if (label === undefined) labels.delete(entry.targetId);
  else labels.set(entry.targetId, label);
}
