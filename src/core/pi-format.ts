import { isRecord } from "./agent-log";
import { fingerprint } from "./context-answer";
import type { SessionEntry } from "./entries";
import { ENTRY_TYPES, Timestamp } from "./entries";
import { isValidId, newId, nowIso } from "./ids";
import type { ImportedSession, ImportWarning } from "./interchange";
import { checkImportEntries, sessionEntries } from "./interchange";
import { tryParseJson } from "./json";
import type { NumberedLine } from "./ndjson";
import { lineError, ndjsonLines, parseLine } from "./ndjson";
import { PiFrameworkRecords } from "./pi-framework-records";
import { fillMissingContent, noteOddities } from "./pi-repairs";
import type { Session } from "./session";

/*
 * pi coding agent sessions (`.jsonl`): a header `{type: "session", version, id, timestamp, cwd}`,
 * then entries; the head is the last entry. Versions 1 to 3 import (migrated as pi migrates them)
 * to the context pi builds for the same file, pi 1.6's entries (`usage`, `context_edit`, system
 * messages, compactions carrying a system message) included; export writes version 3.
 */

export const PI_VERSION = 3;

/** Entry types pi writes, plus ours that pi ignores. `leaf` records have no place in a pi file. */
const PI_ENTRY_TYPES = new Set<string>(ENTRY_TYPES.filter((type) => type !== "leaf"));

interface PiLine {
  line: number;
  /** The line as written, to tell an exact repeat from a conflicting one. */
  text: string;
  entry: Record<string, unknown>;
}

/**
 * Ids like pi's own (8 hex characters) for a v1 file's entries, which had none: derived from the
 * session's id and the entry's place in the file, so that the same file always reads with the same
 * ids (a file that grows syncs as appends); unique within the file.
 */
function v1Id(session: string, index: number, taken: Set<string>): string {
  for (let attempt = 0; ; attempt++) {
    const id = fingerprint(`${session}:${index}:${attempt}`);
    if (!taken.has(id)) {
      taken.add(id);
      return id;
    }
  }
}

/**
 * v1 → v2: entries had no ids; they chain in file order. A compaction's `firstKeptEntryIndex`
 * counts every record of the file, the header as 0 (pi's own migration).
 */
function migrateV1(entries: PiLine[], records: ReadonlyArray<Record<string, unknown>>): void {
  const taken = new Set<string>();
  const session = String(records[0]?.id ?? "");
  let previous: string | null = null;
  // One pass, as pi does it: an index pointing forward names an entry without an id yet.
  for (const [index, { entry }] of entries.entries()) {
    entry.id = v1Id(session, index, taken);
    entry.parentId = previous;
    previous = entry.id as string;
    if (entry.type !== "compaction" || typeof entry.firstKeptEntryIndex !== "number") continue;
    const target = records[entry.firstKeptEntryIndex];
    if (target && target.type !== "session" && target.id !== undefined) entry.firstKeptEntryId = target.id;
    delete entry.firstKeptEntryIndex;
  }
}

/** v2 → v3: the `hookMessage` role became `custom`. */
function migrateV2(entries: PiLine[]): void {
  for (const { entry } of entries) {
    const message = entry.message as { role?: unknown } | undefined;
    if (entry.type === "message" && message && message.role === "hookMessage") message.role = "custom";
  }
}

/**
 * Drops exact repeats of an earlier line. pi up to 0.55.1 could write a branched file twice over
 * (its header, then its entries again); pi reads such a file as if each entry were there once. The
 * same id with other content is a conflict pi would settle silently, so it is refused.
 */
function dropRepeats(entries: PiLine[], warnings: ImportWarning[]): PiLine[] {
  const first = new Map<string, PiLine>();
  const kept: PiLine[] = [];
  for (const item of entries) {
    const id = item.entry.id;
    // An entry without an id is refused by the schema check, at its line.
    const earlier = typeof id === "string" ? first.get(id) : undefined;
    if (!earlier) {
      if (typeof id === "string") first.set(id, item);
      kept.push(item);
    } else if (earlier.text === item.text) {
      warnings.push({ line: item.line, message: `repeats line ${earlier.line} exactly: skipped` });
    } else {
      throw lineError(item.line, `entry id ${String(item.entry.id)} already appears at line ${earlier.line}`);
    }
  }
  return kept;
}

/**
 * Orders entries so parents come before children (pi files need not: the head is written last).
 * An entry whose parent is not in the file becomes a root, which is how pi's path walk reads it
 * (pi writes such files itself: its branched copies leave label entries out); a cycle is refused.
 */
function parentsFirst(entries: PiLine[], warnings: ImportWarning[]): PiLine[] {
  const ids = new Set(entries.map((e) => e.entry.id));
  const waiting = new Map<unknown, PiLine[]>();
  const ordered: PiLine[] = [];
  const placed = new Set<unknown>();
  const place = (first: PiLine) => {
    const stack = [first];
    while (stack.length > 0) {
      const item = stack.pop() as PiLine;
      ordered.push(item);
      placed.add(item.entry.id);
      const children = waiting.get(item.entry.id);
      if (children) {
        waiting.delete(item.entry.id);
        for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as PiLine);
      }
    }
  };
  for (const item of entries) {
    const parentId = item.entry.parentId;
    if (parentId !== null && parentId !== undefined && !ids.has(parentId)) {
      warnings.push({
        line: item.line,
        message: `parentId ${String(parentId)} names no entry of the file: the entry becomes a root, as pi reads it`,
      });
      item.entry.parentId = null;
    }
    const parent = item.entry.parentId;
    if (parent === null || parent === undefined || placed.has(parent)) place(item);
    else waiting.set(parent, [...(waiting.get(parent) ?? []), item]);
  }
  const stuck = [...waiting.values()].flat().sort((a, b) => a.line - b.line)[0];
  if (stuck) throw lineError(stuck.line, "entries whose parents form a cycle");
  return ordered;
}

/**
 * The header's time as the session's `createdAt`, which listings order by and a native export
 * must carry: an ISO 8601 time as written; another form of date (no zone, a date alone, an HTTP
 * date) written as ISO 8601; anything else the time of the import. Both repairs are warnings.
 */
function headerCreatedAt(timestamp: unknown, line: number, warnings: ImportWarning[]): string {
  if (typeof timestamp === "string" && Timestamp.safeParse(timestamp).success) return timestamp;
  const time = typeof timestamp === "string" ? Date.parse(timestamp) : Number.NaN;
  const iso = Number.isNaN(time) ? undefined : new Date(time).toISOString();
  if (iso !== undefined && Timestamp.safeParse(iso).success) {
    warnings.push({
      line,
      message: `timestamp ${JSON.stringify(timestamp)} is not ISO 8601: read as ${iso}`,
    });
    return iso;
  }
  const written =
    timestamp === undefined ? "no timestamp" : `timestamp ${JSON.stringify(timestamp)} is not a date`;
  warnings.push({ line, message: `${written}: the import's time taken` });
  return nowIso();
}

/**
 * Reads a pi session file. Besides pi's own migrations, it repairs what pi writes or leaves behind
 * and opens anyway, reporting each repair as a warning: a last line cut short by a crash is dropped,
 * a repeated header or entry is skipped, an entry with a missing parent becomes a root. Anything
 * else that is malformed (a corrupt line before the last, an unknown entry type) refuses the file.
 */
export function parsePi(text: string): ImportedSession {
  const lines = [...ndjsonLines(text)];
  const first = lines[0];
  if (!first) throw lineError(1, "empty file: expected a pi session header");
  const header = parseLine(first);
  if (header.type !== "session" || typeof header.id !== "string") {
    throw lineError(first.line, 'missing pi session header {"type":"session","id":…}');
  }
  const version = header.version ?? 1;
  if (version !== 1 && version !== 2 && version !== 3) {
    throw lineError(first.line, `unknown pi session version ${JSON.stringify(version)}; 1 to 3 import`);
  }
  if (!isValidId(header.id)) throw lineError(first.line, `session id ${header.id} is not a valid id`);

  const warnings: ImportWarning[] = [];
  const createdAt = headerCreatedAt(header.timestamp, first.line, warnings);
  const last = lines[lines.length - 1] as NumberedLine;
  // A line is torn when a write stopped inside it: only the last can be, and its newline is missing.
  if (lines.length > 1 && !/\n\s*$/.test(text) && tryParseJson(last.text) === undefined) {
    lines.pop();
    warnings.push({
      line: last.line,
      message: "the last line was cut short (a write stopped midway): dropped",
    });
  }
  const records: Array<Record<string, unknown>> = [header];
  let entries: PiLine[] = [];
  for (const line of lines.slice(1)) {
    const entry = parseLine(line);
    records.push(entry);
    if (entry.type === "session") {
      warnings.push({ line: line.line, message: "a second session header: skipped (pi reads the first)" });
      continue;
    }
    if (typeof entry.type !== "string" || !PI_ENTRY_TYPES.has(entry.type)) {
      throw lineError(line.line, `unknown entry type ${JSON.stringify(entry.type)}`);
    }
    entries.push({ line: line.line, text: line.text, entry });
  }
  if (version < 2) migrateV1(entries, records);
  if (version < 3) migrateV2(entries);
  // pi's head is the entry of the last line, even when that line repeats an earlier one.
  const head = entries[entries.length - 1];
  entries = dropRepeats(entries, warnings);
  fillMissingContent(entries, warnings);
  noteOddities(entries, warnings);
  const ordered = parentsFirst(entries, warnings);
  const checked = checkImportEntries(
    ordered.map((e) => e.entry),
    ordered.map((e) => e.line),
  );
  // Header fields other than the session's own (cwd, and those older versions wrote) are kept
  // for the export back to pi.
  const { type: _type, version: _version, id: _id, timestamp: _timestamp, ...rest } = header;
  const pi: Record<string, unknown> = { ...rest, cwd: typeof header.cwd === "string" ? header.cwd : "" };
  return {
    header: { id: header.id, createdAt, metadata: { pi } },
    entries: checked,
    leafId: head ? (head.entry.id as string) : null,
    warnings: warnings.sort((a, b) => a.line - b.line),
  };
}

/** The name pi shows for a `session_info` name: trimmed, blank for none. */
function piName(name: string | undefined): string | undefined {
  return name?.trim() || undefined;
}

/**
 * A session as a pi version 3 file: no `leaf` records, the current head's entry last, the records of
 * cf-sessions 0.1's framework adapters as the messages they stand for. pi takes the
 * name from the file's last `session_info`; when that is not the session's name (a name given at
 * creation, or the head's entry moved after a later rename), one is appended at the head, as pi
 * does when a session is named, so it is on the path and pi's head.
 */
export async function* exportPi(session: Session): AsyncGenerator<string> {
  const [header, leafId, name] = await Promise.all([
    session.getHeader(),
    session.getLeafId(),
    session.getName(),
  ]);
  const pi = (isRecord(header.metadata.pi) ? header.metadata.pi : {}) as Record<string, unknown>;
  const parentSession = typeof pi.parentSession === "string" ? pi.parentSession : header.parentSession?.id;
  const { parentSession: _parentSession, ...extra } = pi;
  yield `${JSON.stringify({
    ...extra,
    type: "session",
    version: PI_VERSION,
    id: header.id,
    timestamp: header.createdAt,
    cwd: typeof pi.cwd === "string" ? pi.cwd : "",
    ...(parentSession === undefined ? {} : { parentSession }),
  })}\n`;
  let fileName: string | undefined;
  const records = new PiFrameworkRecords(session);
  // The head's entry, held back to go last.
  let head: { entry: SessionEntry; lines: string } | undefined;
  for await (const entry of sessionEntries(session)) {
    if (entry.type === "leaf") continue;
    const lines = (await records.entriesFor(entry)).map((e) => `${JSON.stringify(e)}\n`).join("");
    if (entry.id === leafId) {
      head = { entry, lines };
      continue;
    }
    if (entry.type === "session_info") fileName = piName(entry.name);
    yield lines;
  }
  if (head) {
    if (head.entry.type === "session_info") fileName = piName(head.entry.name);
    yield head.lines;
  }
  if (piName(name) !== fileName) {
    yield `${JSON.stringify({
      type: "session_info",
      id: newId(),
      parentId: leafId,
      timestamp: nowIso(),
      name: piName(name) ?? "",
    })}\n`;
  }
}
