import { ENTRY_TYPES } from "./entries";
import { isValidId, nowIso } from "./ids";
import type { ImportedSession } from "./interchange";
import { checkImportEntries, sessionEntries } from "./interchange";
import type { NumberedLine } from "./ndjson";
import { lineError, ndjsonLines, parseLine } from "./ndjson";
import type { Session } from "./session";

/*
 * pi coding agent sessions (`.jsonl`): a header `{type: "session", version, id, timestamp, cwd}`,
 * then entries; the head is the last entry. Versions 1 to 3 import (migrated as pi migrates them);
 * export writes version 3.
 */

export const PI_VERSION = 3;

/** Entry types pi writes, plus ours that pi ignores. `leaf` records have no place in a pi file. */
const PI_ENTRY_TYPES = new Set<string>(ENTRY_TYPES.filter((type) => type !== "leaf"));

interface PiLine {
  line: number;
  entry: Record<string, unknown>;
}

/** Short ids like pi's own (8 hex characters), unique within the file. */
function shortId(taken: Set<string>): string {
  for (;;) {
    const id = crypto.randomUUID().slice(0, 8);
    if (!taken.has(id)) {
      taken.add(id);
      return id;
    }
  }
}

/**
 * v1 → v2: entries had no ids; they chain in file order. A compaction's `firstKeptEntryIndex`
 * counts the file's entries with the header as 0 (pi's own migration).
 */
function migrateV1(entries: PiLine[]): void {
  const taken = new Set<string>();
  let previous: string | null = null;
  // One pass, as pi does it: an index pointing forward names an entry without an id yet.
  for (const { entry } of entries) {
    entry.id = shortId(taken);
    entry.parentId = previous;
    previous = entry.id as string;
    if (entry.type !== "compaction" || typeof entry.firstKeptEntryIndex !== "number") continue;
    const target = entries[entry.firstKeptEntryIndex - 1];
    if (target?.entry.id !== undefined) entry.firstKeptEntryId = target.entry.id;
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
 * Orders entries so parents come before children (pi files need not: the head is written last),
 * refusing a dangling or circular `parentId` at its line.
 */
function parentsFirst(entries: PiLine[]): PiLine[] {
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
      throw lineError(item.line, `parentId ${String(parentId)} names no entry of the file`);
    }
    if (parentId === null || parentId === undefined || placed.has(parentId)) place(item);
    else waiting.set(parentId, [...(waiting.get(parentId) ?? []), item]);
  }
  const stuck = [...waiting.values()].flat().sort((a, b) => a.line - b.line)[0];
  if (stuck) throw lineError(stuck.line, "entries whose parents form a cycle");
  return ordered;
}

export function parsePi(text: string): ImportedSession {
  const lines = ndjsonLines(text);
  const first = lines.next();
  if (first.done) throw lineError(1, "empty file: expected a pi session header");
  const header = parseLine(first.value);
  if (header.type !== "session" || typeof header.id !== "string") {
    throw lineError(first.value.line, 'missing pi session header {"type":"session","id":…}');
  }
  const version = header.version ?? 1;
  if (version !== 1 && version !== 2 && version !== 3) {
    throw lineError(first.value.line, `unknown pi session version ${JSON.stringify(version)}; 1 to 3 import`);
  }
  if (!isValidId(header.id)) throw lineError(first.value.line, `session id ${header.id} is not a valid id`);
  const createdAt =
    typeof header.timestamp === "string" && !Number.isNaN(Date.parse(header.timestamp))
      ? header.timestamp
      : nowIso();

  const entries: PiLine[] = [];
  for (const line of lines as Iterable<NumberedLine>) {
    const entry = parseLine(line);
    if (typeof entry.type !== "string" || !PI_ENTRY_TYPES.has(entry.type)) {
      throw lineError(line.line, `unknown entry type ${JSON.stringify(entry.type)}`);
    }
    entries.push({ line: line.line, entry });
  }
  if (version < 2) migrateV1(entries);
  if (version < 3) migrateV2(entries);
  const ordered = parentsFirst(entries);
  const checked = checkImportEntries(
    ordered.map((e) => e.entry),
    ordered.map((e) => e.line),
  );
  const pi: Record<string, unknown> = { cwd: typeof header.cwd === "string" ? header.cwd : "" };
  if (typeof header.parentSession === "string") pi.parentSession = header.parentSession;
  const last = entries[entries.length - 1];
  return {
    header: { id: header.id, createdAt, metadata: { pi } },
    entries: checked,
    leafId: last ? (last.entry.id as string) : null,
  };
}

/** A session as a pi version 3 file: no `leaf` records, the current head's entry last. */
export async function* exportPi(session: Session): AsyncGenerator<string> {
  const [header, leafId] = await Promise.all([session.getHeader(), session.getLeafId()]);
  const pi = (header.metadata.pi ?? {}) as { cwd?: unknown; parentSession?: unknown };
  const parentSession =
    typeof pi.parentSession === "string"
      ? pi.parentSession
      : header.parentSession
        ? header.parentSession.id
        : undefined;
  yield `${JSON.stringify({
    type: "session",
    version: PI_VERSION,
    id: header.id,
    timestamp: header.createdAt,
    cwd: typeof pi.cwd === "string" ? pi.cwd : "",
    ...(parentSession === undefined ? {} : { parentSession }),
  })}\n`;
  for await (const entry of sessionEntries(session)) {
    if (entry.type !== "leaf" && entry.id !== leafId) yield `${JSON.stringify(entry)}\n`;
  }
  if (leafId !== null) {
    const leaf = await session.getEntry(leafId);
    if (leaf) {
      const { seq: _seq, ...entry } = leaf;
      yield `${JSON.stringify(entry)}\n`;
    }
  }
}
