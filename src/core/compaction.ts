import * as z from "zod";
import { findProjectedCut } from "./compaction-cut";
import type { ProjectedEntry } from "./context";
import { compactionSummary, projectContext, projectEntries } from "./context";
import { latestEdits } from "./context-edits";
import type { TreeEntry } from "./entries";
import { SessionError } from "./errors";
import type { FileLists } from "./file-lists";
import { addFiles, detailsFiles, fileLists } from "./file-lists";
import { messagesCheckpoint } from "./framework-custom-messages";
import { MAX_CONTEXT_TOKENS } from "./limits";
import type { AgentMessage } from "./messages";
import type { SystemMessage } from "./system-messages";
import { currentSystemMessage } from "./system-messages";
import { assistantUsage, estimateContextTokens, estimateTokens } from "./tokens";

/*
 * Planning a compaction (following pi 1.6's rules, see docs/pi.md): what lies between the
 * previous compaction and the cut (compaction-cut.ts) is summarized, the rest kept, and the size
 * of the context before it estimated; and what leaving a branch abandons, for its summary.
 */

export const DEFAULT_KEEP_RECENT_TOKENS = 20_000;

export const CompactionSettings = z.object({
  keepRecentTokens: z
    .number()
    .int()
    .nonnegative()
    .max(MAX_CONTEXT_TOKENS)
    .optional()
    .meta({ description: "default 20000" }),
  retainTail: z
    .boolean()
    .optional()
    .meta({ description: "also store the kept messages, as projected, in the entry (retainedTail)" }),
});
export type CompactionSettings = z.infer<typeof CompactionSettings>;

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
  /** The prompt and tools the context's system messages replay to: the compaction carries them (pi 1.6). */
  systemMessage?: SystemMessage;
}

/**
 * What a compaction of a very long history counts without handing it to its summarizer: the
 * middle of the part it drops (a storage that reads in bounded pages leaves it out of the path it
 * gives, and counts it instead). The summarizer is told how much was left out; the file lists and
 * the size before compaction include it.
 */
export interface OmittedHistory extends FileLists {
  /** The entry the omitted part follows on the path given. */
  after: string;
  messages: number;
  tokens: number;
}

/** What part of an omitted history counts: its messages (system messages aside), their tokens and files. */
export function countOmitted(
  entries: readonly TreeEntry[],
  compactionId?: string,
): Omit<OmittedHistory, "after"> {
  const messages = projectEntries(entries, compactionId).filter((m) => m.role !== "system");
  const tokens = messages.reduce((sum, message) => sum + estimateTokens(message), 0);
  const read = new Set<string>();
  const modified = new Set<string>();
  for (const message of messages) addFiles(message, read, modified);
  return { messages: messages.length, tokens, readFiles: [...read], modifiedFiles: [...modified] };
}

/** Two counts of an omitted history as one (files: as tool calls named them, read and modified apart). */
export function addOmitted(
  a: Omit<OmittedHistory, "after">,
  b: Omit<OmittedHistory, "after">,
): Omit<OmittedHistory, "after"> {
  return {
    messages: a.messages + b.messages,
    tokens: a.tokens + b.tokens,
    readFiles: [...new Set([...a.readFiles, ...b.readFiles])],
    modifiedFiles: [...new Set([...a.modifiedFiles, ...b.modifiedFiles])],
  };
}

/** The note a summarizer reads where the omitted part was. */
function omissionNote(omitted: OmittedHistory, timestamp: number): AgentMessage {
  return {
    role: "custom",
    customType: "omitted",
    content: `[${omitted.messages} earlier messages (about ${omitted.tokens} tokens) are not shown: too long to summarize whole. The files they touched are listed.]`,
    display: false,
    timestamp,
  } as AgentMessage;
}

/**
 * The size of a context before compaction (pi 1.6): the last trustworthy reply's usage plus
 * estimates after it, unless an edit or a compaction came after that reply (its usage counted a
 * context that is no longer the one sent); then every message is estimated, the system messages
 * once as the prompt they replay to.
 */
export function estimateProjectedTokens(
  projected: readonly ProjectedEntry[],
  path: readonly TreeEntry[],
  omittedTokens = 0,
): number {
  const messages = projected.flatMap((p) => p.messages);
  const usageId = projected.findLast((p) => p.messages.some((m) => assistantUsage(m)))?.entry.id;
  // -1 when no reply reported usage: no entry's id is undefined.
  const usageAt = path.findIndex((entry) => entry.id === usageId);
  const invalidatedAt = path.findLastIndex((e) => e.type === "context_edit" || e.type === "compaction");
  if (usageAt >= 0 && usageAt > invalidatedAt) return estimateContextTokens(messages);
  return estimateEachMessage(messages, omittedTokens);
}

/**
 * The size of a context's messages when no reply's usage counts: every message estimated, the
 * system messages once as the prompt they replay to, with `omittedTokens` for a part left out.
 */
export function estimateEachMessage(messages: readonly AgentMessage[], omittedTokens = 0): number {
  const system = currentSystemMessage(messages);
  let tokens = (system ? estimateTokens(system as AgentMessage) : 0) + omittedTokens;
  for (const message of messages) if (message.role !== "system") tokens += estimateTokens(message);
  return tokens;
}

/**
 * The size of the context of a path (pi 1.6's estimate: see `estimateProjectedTokens`), with the
 * tokens of a part of it left out of the path (`omittedTokens`) when the estimate has to count it.
 */
export function estimatePathTokens(path: readonly TreeEntry[], omittedTokens = 0): number {
  return estimateProjectedTokens(projectContext(path), path, omittedTokens);
}

/**
 * Plans a compaction of the branch ending at the path's last entry, over its context as pi 1.6
 * sees it (the previous compaction applied, edits applied): the search starts after the previous
 * compaction, and what lies before the cut is summarized, system messages aside (the compaction
 * carries the prompt they replay to). `path` may be the pruned path a storage returns for
 * buildContext. Fails with `nothing_to_compact` when the leaf is a compaction or no message would
 * be dropped. With `omitted`, the path leaves out part of what is dropped (see `OmittedHistory`).
 */
export function prepareCompaction(
  path: readonly TreeEntry[],
  settings: CompactionSettings = {},
  omitted?: OmittedHistory,
): CompactionPreparation {
  const leaf = path[path.length - 1];
  if (!leaf) throw new SessionError("nothing_to_compact", "the session is empty");
  if (leaf.type === "compaction")
    throw new SessionError("nothing_to_compact", "the leaf is already a compaction");
  const keep = settings.keepRecentTokens ?? DEFAULT_KEEP_RECENT_TOKENS;
  if (!Number.isFinite(keep) || keep < 0)
    throw new SessionError("invalid_request", "keepRecentTokens must be a non-negative number");

  const projected = projectContext(path);
  const opening = projected[0];
  const previous =
    opening?.entry.type === "compaction" && opening.messages.length > 0 ? opening.entry : undefined;
  const start = previous ? 1 : 0;
  const cut = findProjectedCut(projected, start, projected.length, keep, { skipOmittedAttempt: true });
  const cutEntry = projected[cut.index]?.entry;
  const historyEnd = cut.turnStart >= 0 ? cut.turnStart : cut.index;
  const collect = (from: number, to: number) =>
    projected.slice(from, to).flatMap((p) => {
      const messages = p.entry.type === "compaction" ? [] : p.messages.filter((m) => m.role !== "system");
      return p.entry.id === omitted?.after
        ? [...messages, omissionNote(omitted, Date.parse(p.entry.timestamp))]
        : messages;
    });
  // A retained tail is dropped with the previous compaction's opening: it is summarized too.
  const retained = previous?.retainedTail ?? [];
  const messagesToSummarize = [...retained.filter((m) => m.role !== "system"), ...collect(start, historyEnd)];
  const turnPrefixMessages = historyEnd < cut.index ? collect(historyEnd, cut.index) : [];
  if (!cutEntry || (messagesToSummarize.length === 0 && turnPrefixMessages.length === 0)) {
    throw new SessionError(
      "nothing_to_compact",
      "nothing would be dropped: the branch fits in keepRecentTokens",
    );
  }

  const earlier = [...(previous && !previous.fromHook ? [detailsFiles(previous.details)] : []), omitted];
  const files = fileLists([...messagesToSummarize, ...turnPrefixMessages], earlier);
  const systemMessage = currentSystemMessage(projected.flatMap((p) => p.messages));
  const preparation: CompactionPreparation = {
    leafId: leaf.id,
    firstKeptEntryId: cutEntry.id,
    messagesToSummarize,
    turnPrefixMessages,
    tokensBefore: estimateProjectedTokens(projected, path, omitted?.tokens ?? 0),
    ...files,
  };
  if (systemMessage) preparation.systemMessage = systemMessage;
  if (previous) preparation.previousSummary = previous.summary;
  if (settings.retainTail) {
    preparation.retainedTail = projected
      .slice(cut.index)
      .flatMap((p) => (p.entry.type === "compaction" ? [] : p.messages.filter((m) => m.role !== "system")));
  }
  return preparation;
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
  const ancestor = fromPath.findLastIndex((e) => onTarget.has(e.id));
  return summarizeAbandoned(
    fromPath.slice(ancestor + 1),
    ancestor >= 0 ? (fromPath[ancestor] as TreeEntry).id : null,
  );
}

/**
 * What a branch summary summarizes of the abandoned entries (oldest first, after the common
 * ancestor). With `omitted`, they leave out part of a long branch (see `OmittedHistory`): the
 * summarizer is told where, and its files are listed.
 */
export function summarizeAbandoned(
  entries: readonly TreeEntry[],
  commonAncestorId: string | null,
  omitted?: OmittedHistory,
): BranchSummaryPreparation {
  // The abandoned entries as the context showed them: their edits applied (pi 1.6).
  const edits = latestEdits(entries);
  const checkpointId = messagesCheckpoint(entries) ?? null;
  const messages: AgentMessage[] = [];
  for (const entry of entries) {
    const message =
      entry.type === "message" && entry.message.role === "toolResult"
        ? undefined
        : entry.type === "compaction"
          ? compactionSummary(entry)
          : projectEntries([entry], undefined, { edits, checkpointId })[0];
    if (message) messages.push(message);
    if (entry.id === omitted?.after) messages.push(omissionNote(omitted, Date.parse(entry.timestamp)));
  }
  const earlier = [
    ...entries.filter((e) => e.type === "branch_summary" && !e.fromHook).map((e) => detailsFiles(e.details)),
    omitted,
  ];
  return { commonAncestorId, entries: [...entries], messages, ...fileLists(messages, earlier) };
}
