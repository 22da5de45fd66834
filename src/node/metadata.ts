import { randomUUID } from "node:crypto";
import { readFile } from "node:fs";
import { readdir, rename, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { zodDetails } from "../core/append";
import { SessionError } from "../core/errors";
import { isValidId } from "../core/ids";
import type { SessionStats } from "../core/info";
import { sessionInfo } from "../core/info";
import { isRecord } from "../core/providers/incoming";
import type { SessionInfo } from "../core/session-schemas";
import { SessionHeader } from "../core/session-schemas";
import { unlessMissing } from "./errno";
import { METADATA_FILE } from "./layout";
import { syncFolder } from "./sync-folder";

/**
 * `metadata.json`: the session's header, which lives only here, and a copy of what `SessionInfo`
 * shows, so a listing reads one small file per session and never a log. The copy is rewritten
 * after every write; the log stays the truth for entries, and opening a session repairs a copy
 * that a crash left behind (`lines` tells).
 */
export interface SessionMetadata {
  version: 1;
  header: SessionHeader;
  stats: SessionStats;
  leafId: string | null;
  /** Lines of `entries.jsonl` that `stats` and `leafId` describe. */
  lines: number;
  /**
   * Set while a fork or an import writes the session, batch by batch: it is listed and opened
   * only once complete, and one that a crash left unfinished is removed when next opened.
   */
  pending?: true;
}

/**
 * The callback `readFile`: on small files it is several times faster than `fs.promises.readFile`,
 * which reads in more round trips through the thread pool, and `list` reads one file per session.
 */
const readText = promisify(readFile);

/** How the temporary file of a metadata rewrite ends; it is named `metadata.json.<uuid>.tmp`. */
const TEMPORARY_SUFFIX = ".tmp";

export function metadataFile(folder: string): string {
  return join(folder, METADATA_FILE);
}

export function metadataInfo(metadata: SessionMetadata): SessionInfo {
  return sessionInfo(metadata.header, metadata.stats, metadata.leafId);
}

/** Reads and checks a session's metadata; a missing file surfaces as the ENOENT error. */
export async function readMetadata(folder: string): Promise<SessionMetadata> {
  const file = metadataFile(folder);
  const text = await readText(file, "utf8");
  const invalid = (reason: string, details?: unknown) =>
    new SessionError("invalid_request", `${file} is not a session's metadata: ${reason}`, { file, details });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid("not JSON");
  }
  if (!isRecord(value) || value.version !== 1) throw invalid("unknown version");
  const header = SessionHeader.safeParse(value.header);
  if (!header.success) throw invalid("bad header", zodDetails(header.error, ["header"]));
  if (!isStats(value.stats)) throw invalid("bad stats");
  const { leafId, lines, pending } = value;
  if (leafId !== null && !isValidId(leafId)) throw invalid("bad leafId");
  if (!isCount(lines)) throw invalid("bad lines");
  if (pending !== undefined && pending !== true) throw invalid("bad pending");
  const metadata: SessionMetadata = { version: 1, header: header.data, stats: value.stats, leafId, lines };
  if (pending) metadata.pending = true;
  return metadata;
}

/**
 * Replaces the metadata atomically: written to a temporary file, flushed, then renamed over the
 * old one, so a reader or a crash sees the old file or the new one, never a mix. The folder is
 * flushed after the rename, so the new file is the one a crash leaves.
 */
export async function writeMetadata(folder: string, metadata: SessionMetadata): Promise<void> {
  const file = metadataFile(folder);
  const temporary = `${file}.${randomUUID()}${TEMPORARY_SUFFIX}`;
  try {
    await writeFile(temporary, JSON.stringify(metadata), { flag: "wx", flush: true });
    await rename(temporary, file);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  await syncFolder(folder);
}

/**
 * Removes the temporary files of rewrites that a crash interrupted. Only for the holder of the
 * session's lock: the temporary file of a rewrite under way looks the same.
 */
export async function removeMetadataLeftovers(folder: string): Promise<void> {
  const prefix = `${METADATA_FILE}.`;
  const leftovers = (await readdir(folder)).filter(
    (name) => name.startsWith(prefix) && name.endsWith(TEMPORARY_SUFFIX),
  );
  await Promise.all(leftovers.map((name) => unlessMissing(unlink(join(folder, name)))));
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isStats(value: unknown): value is SessionStats {
  if (!isRecord(value)) return false;
  const { entryCount, messageCount, preview, entryName, updatedAt } = value;
  if (!isCount(entryCount) || !isCount(messageCount) || typeof updatedAt !== "string") return false;
  if (preview !== undefined && typeof preview !== "string") return false;
  if (entryName === undefined) return true;
  return isRecord(entryName) && (entryName.name === undefined || typeof entryName.name === "string");
}
