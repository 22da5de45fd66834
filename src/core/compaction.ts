import * as z from "zod";
import { buildSessionContext, latestCompaction, projectEntries } from "./context";
import type { CompactionEntry, TreeEntry } from "./entries";
import { SessionError } from "./errors";
import type { AgentMessage } from "./messages";
import { estimateContextTokens, estimateTokens } from "./tokens";

/*
 * Where to cut a branch for compaction (following pi's rules): keep at least
 * `keepRecentTokens` of the newest messages, cut only where a turn may start (never at a tool
 * result, never between a tool call and its result), and summarize what lies between the previous
 * compaction's first kept entry and the cut.
 */

export const DEFAULT_KEEP_RECENT_TOKENS = 20_000;

export const CompactionSettings = z.object({
  keepRecentTokens: z.number().int().nonnegative().optional().meta({ description: "default 20000" }),
  retainTail: z
    .boolean()
    .optional()
    .meta({ description: "also store the kept messages, as projected, in the entry (retainedTail)" }),
});
export type CompactionSettings = z.infer<typeof CompactionSettings>;

export interface FileLists {
  readFiles: string[];
  modifiedFiles: string[];
}

export interface CompactionPreparation extends FileLists {
  /** The leaf the preparation was made for. */
  leafId: string;
  firstKeptEntryId: string;
  /** What the kept part drops: the history to summarize. */
  messagesToSummarize: AgentMessage[];
  /** When the cut falls inside a turn: the start of that turn, summarized apart. */
  turnPrefixMessages: AgentMessage[];
  previousSummary?: string;
  tokensBefore: number;
  retainedTail?: AgentMessage[];
}

/** The message an entry adds to a conversation being summarized (compactions add none). */
function summaryMessage(entry: TreeEntry): AgentMessage | undefined {
  if (entry.type === "compaction") return undefined;
  return projectEntries([entry], undefined)[0];
}

const TURN_START_ROLES = new Set(["user", "bashExecution"]);
const CUT_ROLES = new Set([
  "user",
  "assistant",
  "custom",
  "bashExecution",
  "branchSummary",
  "compactionSummary",
]);

function isCutRole(entry: TreeEntry): boolean {
  if (entry.type === "branch_summary" || entry.type === "custom_message") return true;
  return entry.type === "message" && CUT_ROLES.has(entry.message.role);
}

function startsTurn(entry: TreeEntry): boolean {
  if (entry.type === "branch_summary" || entry.type === "custom_message") return true;
  return entry.type === "message" && TURN_START_ROLES.has(entry.message.role);
}

function toolCallIds(entry: TreeEntry): string[] {
  if (entry.type !== "message" || entry.message.role !== "assistant") return [];
  const content = (entry.message as { content?: unknown }).content;
  if (!Array.isArray(content)) return [];
  return content.filter((p) => p?.type === "toolCall" && typeof p.id === "string").map((p) => p.id as string);
}

/**
 * Positions in [start, end) where a kept part may begin: a turn-starting entry, and not inside
 * the span from a tool call to its result (cutting there would keep a result without its call).
 */
function cutPoints(path: readonly TreeEntry[], start: number, end: number): number[] {
  const callAt = new Map<string, number>();
  const blocked = new Uint8Array(end - start);
  for (let i = start; i < end; i++) {
    const entry = path[i] as TreeEntry;
    for (const id of toolCallIds(entry)) callAt.set(id, i);
    if (entry.type === "message" && entry.message.role === "toolResult") {
      const call = callAt.get((entry.message as { toolCallId: string }).toolCallId);
      if (call !== undefined) for (let j = call + 1; j <= i; j++) blocked[j - start] = 1;
    }
  }
  const points: number[] = [];
  for (let i = start; i < end; i++)
    if (!blocked[i - start] && isCutRole(path[i] as TreeEntry)) points.push(i);
  return points;
}

/** The index where the kept part begins, holding at least `keep` tokens when the branch has them. */
export function findCut(path: readonly TreeEntry[], start: number, end: number, keep: number): number {
  const points = cutPoints(path, start, end);
  if (points.length === 0) return start;
  let cut = points[0] as number;
  let tokens = 0;
  for (let i = end - 1; i >= start; i--) {
    const message = summaryMessage(path[i] as TreeEntry);
    if (!message) continue;
    tokens += estimateTokens(message);
    if (tokens < keep) continue;
    // The nearest cut at or after i; past the last one, the last one (a turn longer than the
    // budget is kept whole rather than not compacted at all).
    cut = points.find((p) => p >= i) ?? (points[points.length - 1] as number);
    break;
  }
  // Settings and other non-message entries just before the cut stay with what they precede.
  while (cut > start) {
    const previous = path[cut - 1] as TreeEntry;
    if (previous.type === "compaction" || previous.type === "message") break;
    cut--;
  }
  return cut;
}

function addFiles(message: AgentMessage, read: Set<string>, modified: Set<string>): void {
  if (message.role !== "assistant" || !Array.isArray((message as { content?: unknown }).content)) return;
  for (const part of (message as { content: unknown[] }).content) {
    const call = part as { type?: unknown; name?: unknown; arguments?: { path?: unknown } };
    if (call?.type !== "toolCall" || typeof call.arguments?.path !== "string") continue;
    if (call.name === "read") read.add(call.arguments.path);
    else if (call.name === "edit" || call.name === "write") modified.add(call.arguments.path);
  }
}

/** Files read and modified by tool calls in `messages`, on top of what earlier summaries recorded. */
export function fileLists(
  messages: readonly AgentMessage[],
  earlier: ReadonlyArray<FileLists | undefined> = [],
): FileLists {
  const read = new Set<string>();
  const modified = new Set<string>();
  for (const lists of earlier) {
    for (const file of lists?.readFiles ?? []) read.add(file);
    for (const file of lists?.modifiedFiles ?? []) modified.add(file);
  }
  for (const message of messages) addFiles(message, read, modified);
  return { readFiles: [...read].filter((f) => !modified.has(f)).sort(), modifiedFiles: [...modified].sort() };
}

function detailsFiles(details: unknown): FileLists | undefined {
  if (!details || typeof details !== "object") return undefined;
  const { readFiles, modifiedFiles } = details as { readFiles?: unknown; modifiedFiles?: unknown };
  const strings = (v: unknown) =>
    Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
  return { readFiles: strings(readFiles), modifiedFiles: strings(modifiedFiles) };
}

/**
 * Plans a compaction of the branch ending at the path's last entry. `path` may be the pruned path
 * a storage returns for buildContext: it starts at the previous compaction's kept part, which is
 * where the search starts anyway. Fails with `nothing_to_compact` when the leaf is a compaction or
 * no message would be dropped.
 */
export function prepareCompaction(
  path: readonly TreeEntry[],
  settings: CompactionSettings = {},
): CompactionPreparation {
  const leaf = path[path.length - 1];
  if (!leaf) throw new SessionError("nothing_to_compact", "the session is empty");
  if (leaf.type === "compaction")
    throw new SessionError("nothing_to_compact", "the leaf is already a compaction");
  const keep = settings.keepRecentTokens ?? DEFAULT_KEEP_RECENT_TOKENS;
  if (!Number.isFinite(keep) || keep < 0)
    throw new SessionError("invalid_request", "keepRecentTokens must be a non-negative number");

  const previous: CompactionEntry | undefined = latestCompaction(path);
  let start = 0;
  if (previous) {
    const at = path.lastIndexOf(previous);
    const firstKept =
      previous.firstKeptEntryId === undefined
        ? -1
        : path.findIndex((e) => e.id === previous.firstKeptEntryId);
    start = firstKept >= 0 && firstKept < at ? firstKept : at + 1;
  }
  const cut = findCut(path, start, path.length, keep);
  const cutEntry = path[cut];
  let turnStart = -1;
  if (cutEntry && !(cutEntry.type === "message" && cutEntry.message.role === "user")) {
    for (let i = cut; i >= start; i--) {
      if (startsTurn(path[i] as TreeEntry)) {
        turnStart = i;
        break;
      }
    }
  }
  const historyEnd = turnStart >= 0 && turnStart < cut ? turnStart : cut;
  const collect = (from: number, to: number) =>
    path.slice(from, to).flatMap((entry) => {
      const message = summaryMessage(entry);
      return message ? [message] : [];
    });
  const messagesToSummarize = collect(start, historyEnd);
  const turnPrefixMessages = historyEnd < cut ? collect(historyEnd, cut) : [];
  if (!cutEntry || (messagesToSummarize.length === 0 && turnPrefixMessages.length === 0)) {
    throw new SessionError(
      "nothing_to_compact",
      "nothing would be dropped: the branch fits in keepRecentTokens",
    );
  }

  const earlier = previous && !previous.fromHook ? [detailsFiles(previous.details)] : [];
  const files = fileLists([...messagesToSummarize, ...turnPrefixMessages], earlier);
  const preparation: CompactionPreparation = {
    leafId: leaf.id,
    firstKeptEntryId: cutEntry.id,
    messagesToSummarize,
    turnPrefixMessages,
    tokensBefore: estimateContextTokens(buildSessionContext(path).messages),
    ...files,
  };
  if (previous) preparation.previousSummary = previous.summary;
  if (settings.retainTail) preparation.retainedTail = projectEntries(path.slice(cut), undefined);
  return preparation;
}

/** pi's way of listing files under a summary, so a model sees what the work touched. */
export function formatFileLists({ readFiles, modifiedFiles }: FileLists): string {
  const sections: string[] = [];
  if (readFiles.length > 0) sections.push(`<read-files>\n${readFiles.join("\n")}\n</read-files>`);
  if (modifiedFiles.length > 0)
    sections.push(`<modified-files>\n${modifiedFiles.join("\n")}\n</modified-files>`);
  return sections.length === 0 ? "" : `\n\n${sections.join("\n\n")}`;
}

export interface BranchSummaryPreparation extends FileLists {
  /** The deepest entry on both paths (`null` when they share none). */
  commonAncestorId: string | null;
  /** The abandoned entries, oldest first: from after the common ancestor to the old leaf. */
  entries: TreeEntry[];
  messages: AgentMessage[];
}

/** What leaving `fromPath` for `toPath` abandons: the entries from its end back to the common ancestor. */
export function prepareBranchSummary(
  fromPath: readonly TreeEntry[],
  toPath: readonly TreeEntry[],
): BranchSummaryPreparation {
  const onTarget = new Set(toPath.map((e) => e.id));
  let ancestor = -1;
  for (let i = fromPath.length - 1; i >= 0; i--) {
    if (onTarget.has((fromPath[i] as TreeEntry).id)) {
      ancestor = i;
      break;
    }
  }
  const entries = fromPath.slice(ancestor + 1);
  const messages: AgentMessage[] = [];
  for (const entry of entries) {
    if (entry.type === "message" && entry.message.role === "toolResult") continue;
    const message =
      entry.type === "compaction"
        ? {
            role: "compactionSummary",
            summary: entry.summary,
            tokensBefore: entry.tokensBefore,
            timestamp: Date.parse(entry.timestamp),
          }
        : summaryMessage(entry);
    if (message) messages.push(message);
  }
  const earlier = entries
    .filter((e) => e.type === "branch_summary" && !e.fromHook)
    .map((e) => detailsFiles(e.details));
  return {
    commonAncestorId: ancestor >= 0 ? (fromPath[ancestor] as TreeEntry).id : null,
    entries,
    messages,
    ...fileLists(messages, earlier),
  };
}
