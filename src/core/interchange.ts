import * as z from "zod";
import type { AppendView } from "./append";
import { planImport } from "./append";
import type { SessionEntry } from "./entries";
import { SessionError } from "./errors";
import { newId } from "./ids";
import { lineError } from "./ndjson";
import { NO_CONVERSATION } from "./providers/provider-entries";
import type { Session } from "./session";
import type { SessionHeader } from "./session-schemas";
import type { SessionStorage } from "./storage";

/*
 * What an import file holds once parsed and checked, whatever its format: the session's header,
 * its entries in an order where every parent comes before its children, and where the head goes.
 */

/** A session's header as a file carries it: automatic compaction is the service's own setting. */
export type ImportHeader = Omit<SessionHeader, "autoCompact">;

/** A repair made on the way in (a torn last line dropped, a missing parent made a root, …), at the 1-based line of the file it concerns. */
export const ImportWarning = z
  .object({ line: z.number().int().positive(), message: z.string() })
  .meta({ id: "ImportWarning" });
export type ImportWarning = z.infer<typeof ImportWarning>;

export interface ImportedSession {
  header: ImportHeader;
  entries: SessionEntry[];
  leafId: string | null;
  /** What was repaired to import the file, in line order; empty when it imported as written. */
  warnings: ImportWarning[];
  /**
   * The entry holding the line that gave the session its name (an agent that names its sessions
   * in lines of their own, such as Claude Code's titles or Codex's renames): a sync that writes
   * this entry names the session again.
   */
  namedBy?: string;
}

/** How an import file is read. */
export interface ParseOptions {
  /**
   * Each line as entries of its own, never folded into the entries of lines before it (the
   * streamed blocks of one answer stay a message each; a usage count written after an answer is
   * not added to it): the entries of a file's first lines are then the same however the file grows,
   * which is what mirroring a file while it is written needs. A whole-file import folds them.
   */
  linesApart?: boolean;
}

/** Formats a session can be imported from: ours, pi's, and other agents' logs. */
export type ImportFormat = "native" | "pi" | "claude-code" | "codex";
export const IMPORT_FORMATS: readonly ImportFormat[] = ["native", "pi", "claude-code", "codex"];

/** Formats a session can be exported to (and imported back from): all of them. */
export type ExportFormat = ImportFormat;
export const EXPORT_FORMATS: readonly ExportFormat[] = IMPORT_FORMATS;

function pickFormat<F extends string>(format: string | undefined, formats: readonly F[]): F {
  const value = format ?? "native";
  if (!(formats as readonly string[]).includes(value)) {
    throw new SessionError("unsupported_format", `unknown format ${value}; use ${formats.join(", ")}`, {
      format: value,
    });
  }
  return value as F;
}

/** The import format named (default `native`), or `unsupported_format`. */
export function checkFormat(format: string | undefined): ImportFormat {
  return pickFormat(format, IMPORT_FORMATS);
}

/** The export format named (default `native`), or `unsupported_format`. */
export function checkExportFormat(format: string | undefined): ExportFormat {
  return pickFormat(format, EXPORT_FORMATS);
}

const emptyView: AppendView = {
  leafId: null,
  nextSeq: 1,
  ref: () => undefined,
  load: () => undefined,
  onPath: () => false,
  conversationAt: () => NO_CONVERSATION,
};

/**
 * Checks entries as an import would write them (schema, unique ids, parents present and before
 * their children, leaf records pointing at entries) and reports the first problem at its line.
 */
export function checkImportEntries(entries: readonly unknown[], lines: readonly number[]): SessionEntry[] {
  if (entries.length === 0) return [];
  try {
    return planImport(entries, emptyView).entries.map(({ seq: _seq, ...entry }) => entry as SessionEntry);
  } catch (error) {
    if (!(error instanceof SessionError)) throw error;
    const line = lineOfBatchError(error, lines);
    if (line === undefined) throw error;
    throw lineError(line, error.message, {
      code: error.code,
      ...(Array.isArray(error.details) ? { issues: error.details } : {}),
    });
  }
}

/** The line of the entry a refused batch points at (`lines` holds each entry's), when it says which. */
export function lineOfBatchError(error: SessionError, lines: readonly number[]): number | undefined {
  const details = error.details;
  let index: number | undefined;
  if (Array.isArray(details)) index = details[0]?.path?.[0];
  else if (details && typeof details === "object" && "index" in details)
    index = (details as { index: number }).index;
  return index === undefined ? undefined : lines[index];
}

/** Where the head ends after writing `entries` in order (each entry, or a leaf record's target). */
export function leafAfter(entries: readonly SessionEntry[]): string | null {
  let leafId: string | null = null;
  for (const entry of entries) leafId = entry.type === "leaf" ? entry.targetId : entry.id;
  return leafId;
}

/** Entries, and characters of them, sent to a session per import call (RPC answers and arguments are capped). */
export const IMPORT_BATCH = 500;
export const IMPORT_BATCH_CHARS = 8 * 1024 * 1024;

/** Splits entries into calls of bounded count and size (import calls by default). */
export function* importBatches<T>(
  entries: readonly T[],
  maxCount = IMPORT_BATCH,
  maxChars = IMPORT_BATCH_CHARS,
) {
  let batch: T[] = [];
  let chars = 0;
  for (const entry of entries) {
    const size = JSON.stringify(entry).length;
    if (batch.length > 0 && (batch.length >= maxCount || chars + size > maxChars)) {
      yield batch;
      batch = [];
      chars = 0;
    }
    batch.push(entry);
    chars += size;
  }
  if (batch.length > 0) yield batch;
}

/**
 * Writes an imported session through `create` (which makes an empty session with the given header
 * and fails with `already_exists` when the id is taken). The file's id is kept unless it is taken,
 * then a new one is chosen; an explicit `id` that is taken is an error. All or nothing.
 */
export async function writeImport<Target extends SessionStorage>(
  file: ImportedSession,
  options: { id?: string },
  create: (header: ImportHeader) => Promise<Target>,
): Promise<Target> {
  let storage: Target;
  if (options.id !== undefined) storage = await create({ ...file.header, id: options.id });
  else {
    try {
      storage = await create(file.header);
    } catch (error) {
      if (!(error instanceof SessionError) || error.code !== "already_exists") throw error;
      storage = await create({ ...file.header, id: newId() });
    }
  }
  try {
    // Every parser checked its entries already.
    for (const batch of importBatches(file.entries)) await storage.importEntries(batch, { validated: true });
    if (leafAfter(file.entries) !== file.leafId) await storage.setLeafId(file.leafId);
    return storage;
  } catch (error) {
    await storage.delete().catch(() => undefined);
    throw error;
  }
}

/** Every entry of a session in append order, read page by page. */
export async function* sessionEntries(session: Session): AsyncGenerator<SessionEntry> {
  for await (const { seq: _seq, ...entry } of session.allEntries()) yield entry as SessionEntry;
}
