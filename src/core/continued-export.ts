import { isMadeUuid } from "./agent-ids";
import { isRecord } from "./agent-log";
import { exportClaudeCode, transcriptLines } from "./claude-code-export";
import { parseClaudeCode } from "./claude-code-format";
import { exportCodexAs } from "./codex-export";
import { parseCodex, recordedExport } from "./codex-format";
import type { ExportRecord } from "./codex-items";
import type { SessionEntry, StoredEntry } from "./entries";
import type { ImportedSession, ParseOptions } from "./interchange";
import type { Rewind } from "./rewind";
import { entryContent, writtenHere } from "./same-entry";
import type { Session } from "./session";
import type { TreeNode } from "./tree";

/*
 * A Claude Code or Codex file made from the session's export (what `pull` writes), which the agent
 * went on in. The export writes what no line of that agent holds (a note, a message over HTTP,
 * another agent's turns) as lines of the agent's own kind, and those lines read back as other
 * entries than the stored ones: a note as a user line, a Codex line under the id of its place in
 * the file. A file holding every entry its export reads back as holds the session as exported, and
 * the agent's entries after them go on from the entries the export wrote their lines for.
 *
 * The file began as the export made when it was pulled, and the session's head may have moved
 * since: an export now may leave out the lines that one wrote for entries of the branch the head
 * left, and they must not read as the agent's. A Claude Code line carries the id of the entry it
 * was written for, or a UUID made from that id, which Claude Code never makes; a Codex rollout
 * records how its export was made (see codex-export.ts), and is read as that export.
 */

interface AgentFormat {
  /** The key of the agent's fields in a session's metadata. */
  key: string;
  prefix: string;
  /** The session's export now, or the one `made` records. */
  exportLines(session: Session, made: ExportRecord | undefined): AsyncGenerator<string>;
  parse(text: string, options: ParseOptions): ImportedSession;
  /** How the export the file was made from was made, when the file records it. */
  made?(file: ImportedSession): ExportRecord | undefined;
  /** Whether a line of this id is one an export wrote, never the agent. */
  writtenByExport?(id: string): boolean;
  /**
   * Where the agent's line under the export's line `id` goes on, for a line the export wrote again
   * for what the latest compaction kept: under a compaction repeating its summary (`rewindTo`).
   */
  rewindsAt?(session: Session): Promise<(id: string) => Rewind | undefined>;
}

const AGENTS: readonly AgentFormat[] = [
  {
    key: "claudeCode",
    prefix: "claude-code:",
    exportLines: (session) => exportClaudeCode(session),
    parse: parseClaudeCode,
    writtenByExport: isMadeUuid,
    rewindsAt: async (session) => {
      const lines = await transcriptLines(session);
      return (id) => lines.rewindAt(id);
    },
  },
  {
    key: "codex",
    prefix: "codex:",
    exportLines: (session, made) => exportCodexAs(session, made),
    parse: parseCodex,
    made: (file) => recordedExport(file.entries),
  },
];

/** What a file holds beyond the session's export: its entries, hung where they go on, and its head. */
export interface Continuation {
  entries: SessionEntry[];
  leafId: string | null;
}

/**
 * The session as a sync reads it: its head, and its entries by id, each read from storage once
 * however many lines name it (on a remote storage each read is a call).
 */
interface StoredReads {
  leafId: string | null;
  entry(id: string): Promise<StoredEntry | undefined>;
  /** Where a line under the export's line `id` goes on, when the export's agent tells (`rewindsAt`). */
  rewindAt(id: string): Promise<Rewind | undefined>;
}

function storedReads(session: Session, leafId: string | null, agent: AgentFormat): StoredReads {
  const read = new Map<string, StoredEntry | undefined>();
  let rewinds: Promise<(id: string) => Rewind | undefined> | undefined;
  return {
    leafId,
    async entry(id) {
      if (!read.has(id)) read.set(id, await session.getEntry(id));
      return read.get(id);
    },
    async rewindAt(id) {
      if (!agent.rewindsAt) return undefined;
      rewinds ??= agent.rewindsAt(session);
      return (await rewinds)(id);
    },
  };
}

/** Whether the tree holds entries under entry `id`. */
function hasChildren(roots: readonly TreeNode[], id: string): boolean {
  const stack = [...roots];
  for (let node = stack.pop(); node; node = stack.pop()) {
    if (node.id === id) return node.children.length > 0;
    stack.push(...node.children);
  }
  return false;
}

/** Whether a stored entry holds lines of the agent's (imported from its file, or synced from one). */
function holdsLines(entry: Record<string, unknown>, agent: AgentFormat): boolean {
  if (Array.isArray(entry.sourceLines) || isRecord(entry.line)) return true;
  return typeof entry.customType === "string" && entry.customType.startsWith(agent.prefix);
}

/**
 * The file's entries after what the session's export to the file's agent reads back as, hung under
 * the session's: the export's head is the session's (or the one the file records its export was
 * made at), and a line the export wrote for an entry under that entry's id (Claude Code's lines
 * carry it) is that entry. Undefined when the file does not hold the whole export as written, or
 * goes on from one of its lines that is neither, or holds a line an export wrote that this one
 * does not.
 */
export async function continuedExport(
  session: Session,
  file: ImportedSession,
): Promise<Continuation | undefined> {
  const agent = AGENTS.find((format) => isRecord(file.header.metadata[format.key]));
  if (!agent) return undefined;
  // A record of another session's export (the file this session was made from) tells nothing here.
  const recorded = agent.made?.(file);
  const made = recorded?.session === session.id ? recorded : undefined;
  const leafId = made ? made.head : await session.getLeafId();
  const stored = storedReads(session, leafId, agent);
  if (made && !(await stored.entry(made.head))) return undefined;
  // A file that neither records its export's head nor tells the lines an export wrote (a rollout
  // exported before rollouts recorded it), with the head moved back: the lines an export made
  // before the move wrote for what is under it would read as the agent's own, so only a file
  // holding nothing beyond the export as it stands now is this session's.
  const movedBack =
    made === undefined &&
    agent.writtenByExport === undefined &&
    leafId !== null &&
    hasChildren(await session.getTree(), leafId);
  let text = "";
  for await (const line of agent.exportLines(session, made)) text += line;
  // The file was read whole or a line at a time: the export is read back both ways.
  for (const linesApart of [false, true]) {
    const continued = await goesOn(stored, agent, agent.parse(text, { linesApart }), file);
    if (!continued) continue;
    if (continued.entries.length === 0) return continued;
    // What the agent added goes on only from where the file was pulled.
    if (movedBack || (made && !(await stillAtPull(session, made.head, file)))) continue;
    return continued;
  }
  return undefined;
}

/**
 * Whether the session is where a file pulled at `pulledAt` left it: its head is that entry, or one
 * above it (moved back since), or under it through entries stored from the file alone (synced
 * before). A head past it through an entry written elsewhere is the session gone on since the
 * pull: the file conflicts with it, as any file whose export does not hold what the session does.
 */
async function stillAtPull(session: Session, pulledAt: string, file: ImportedSession): Promise<boolean> {
  const head = await session.getLeafId();
  if (head === null) return true;
  const path = await session.getBranch(head);
  const at = path.findIndex((entry) => entry.id === pulledAt);
  const fromFile = new Set(file.entries.map((entry) => entry.id));
  if (at >= 0) return path.slice(at + 1).every((entry) => fromFile.has(entry.id) || writtenHere(entry));
  // Moved back: the head, past what was written here about the conversation since, is above it.
  const above = path.findLast((entry) => !writtenHere(entry));
  return above === undefined || (await session.getBranch(pulledAt)).some((entry) => entry.id === above.id);
}

/** The file's entries matched with the export's entries of the same content, the same id first. */
function matched(
  exported: readonly SessionEntry[],
  file: readonly SessionEntry[],
): Map<string, SessionEntry> {
  const byContent = new Map<string, SessionEntry[]>();
  for (const entry of exported) {
    const key = entryContent(entry);
    byContent.set(key, [...(byContent.get(key) ?? []), entry]);
  }
  const pairs = new Map<string, SessionEntry>();
  for (const entry of file) {
    const candidates = byContent.get(entryContent(entry));
    if (!candidates?.length) continue;
    const at = Math.max(
      0,
      candidates.findIndex((candidate) => candidate.id === entry.id),
    );
    pairs.set(entry.id, candidates.splice(at, 1)[0] as SessionEntry);
  }
  return pairs;
}

async function goesOn(
  session: StoredReads,
  agent: AgentFormat,
  exported: ImportedSession,
  file: ImportedSession,
): Promise<Continuation | undefined> {
  const pairs = matched(exported.entries, file.entries);
  if (pairs.size < exported.entries.length) return undefined;
  const entries: SessionEntry[] = [];
  /**
   * The stored entry an entry of the export stands for; for a line the export wrote again for what
   * the latest compaction kept, a compaction repeating its summary up to there, written first (at
   * `timestamp`, the time of the line going on from it).
   */
  const standsFor = async (entry: SessionEntry, timestamp: string): Promise<string | null | undefined> => {
    if (entry.id === exported.leafId) return session.leafId ?? undefined;
    const stored = await session.entry(entry.id);
    if (!stored) {
      const rewind = await session.rewindAt(entry.id);
      if (rewind === undefined) return undefined;
      for (const written of rewind.entries) entries.push({ ...written, timestamp } as SessionEntry);
      return rewind.parentId;
    }
    const { seq: _seq, ...storedEntry } = stored;
    const same = entryContent(storedEntry) === entryContent(entry);
    return same || !holdsLines(storedEntry, agent) ? entry.id : undefined;
  };
  const inFile = new Map(file.entries.map((entry) => [entry.id, entry]));
  /**
   * Whether the session holds the file's entry `id`: stored from the file before, under the parent
   * it was given then.
   */
  const isStored = async (id: string): Promise<boolean> => {
    const stored = await session.entry(id);
    if (!stored) return false;
    const { seq: _seq, ...storedEntry } = stored;
    return entryContent(storedEntry) === entryContent(inFile.get(id) as SessionEntry);
  };
  /**
   * Where the file's entry `id` is in the session: the id of a stored entry, or of one written now;
   * `timestamp` is the time of the entry going on from it.
   */
  const placed = new Map<string, string | null | undefined>();
  const place = async (id: string | null, timestamp: string): Promise<string | null | undefined> => {
    if (id === null) return null;
    if (!placed.has(id)) {
      const pair = pairs.get(id);
      // The export's last line stands for the head even where its entry was stored: entries no
      // line is written for (a context edit, a label) may be under it, and the agent went on
      // from them.
      const head = pair?.id === exported.leafId;
      placed.set(id, pair && (head || !(await isStored(id))) ? await standsFor(pair, timestamp) : id);
    }
    return placed.get(id);
  };
  for (const entry of file.entries) {
    if (pairs.has(entry.id)) continue;
    // Synced before (a line of a branch the export leaves out), or changed in the file.
    if (await isStored(entry.id)) continue;
    if (await session.entry(entry.id)) return undefined;
    // An export's line for an entry this export leaves out (on a branch the head has left): read as
    // the agent's, it would store that entry again.
    if (agent.writtenByExport?.(entry.id)) return undefined;
    const parentId = await place(entry.parentId, entry.timestamp);
    if (parentId === undefined) return undefined;
    entries.push(parentId === entry.parentId ? entry : ({ ...entry, parentId } as SessionEntry));
  }
  const leaf = file.leafId === null ? undefined : inFile.get(file.leafId);
  const head = await place(file.leafId, leaf?.timestamp ?? new Date().toISOString());
  if (head === undefined) return undefined;
  return { entries, leafId: head };
}
