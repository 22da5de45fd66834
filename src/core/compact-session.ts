import * as z from "zod";
import { checkExpectedLeaf, headFor } from "./append";
import type { BranchSummaryPreparation, OmittedHistory } from "./compaction";
import {
  CompactionSettings,
  DEFAULT_KEEP_RECENT_TOKENS,
  prepareBranchSummary,
  prepareCompaction,
  summarizeAbandoned,
} from "./compaction";
import { latestCompaction, projectContext } from "./context";
import type { CompactionEntry, EntryInput, StoredEntry, TreeEntry } from "./entries";
import { BranchSummaryEntry, Id, LeafEntry, stored } from "./entries";
import { SessionError } from "./errors";
import { formatFileLists } from "./file-lists";
import { Position } from "./session-schemas";
import type { AppendOptions, SessionStorage } from "./storage";
import type { Summarizer, SummaryRequest, SummaryResult } from "./summarizers/summarizer";
import { currentSystemMessage } from "./system-messages";

/** What a caller asks of a compaction (the service's request body). */
export const CompactRequest = CompactionSettings.extend({
  summary: z.string().optional().meta({ description: "the summary itself; no summarizer is called" }),
  customInstructions: z.string().optional(),
}).strict();
export type CompactRequest = z.infer<typeof CompactRequest>;

export interface CompactOptions extends CompactRequest {
  summarizer?: Summarizer;
  signal?: AbortSignal;
}

/** What compaction reads and writes of a session. */
export type CompactionStorage = Pick<
  SessionStorage,
  "getLeafId" | "getContextPath" | "getCompactionPath" | "appendEntries"
>;

/** What navigation reads and writes of a session. */
export type NavigationStorage = Pick<
  SessionStorage,
  "getLeafId" | "setLeafId" | "getEntry" | "getBranch" | "getAbandonedPath" | "appendEntries"
>;

/** What leaving `oldLeaf` for `targetId` abandons: read bounded where the storage can. */
async function abandoned(
  storage: NavigationStorage,
  oldLeaf: string | null,
  targetId: string | null,
): Promise<BranchSummaryPreparation> {
  if (oldLeaf !== null && storage.getAbandonedPath) {
    const { commonAncestorId, path, omitted } = await storage.getAbandonedPath(oldLeaf, targetId);
    return summarizeAbandoned(path, commonAncestorId, omitted);
  }
  const [from, to] = await Promise.all([
    oldLeaf === null ? [] : storage.getBranch(oldLeaf),
    targetId === null ? [] : storage.getBranch(targetId),
  ]);
  return prepareBranchSummary(from, to);
}

async function appendOne(
  storage: Pick<SessionStorage, "appendEntries">,
  entry: EntryInput,
  options: AppendOptions,
): Promise<StoredEntry> {
  return (await storage.appendEntries([entry], options)).entries[0] as StoredEntry;
}

/** What a compaction at `leafId` reads: the storage's bounded compaction path, or the context path. */
function compactionPath(
  storage: CompactionStorage,
  leafId: string,
  options: CompactOptions,
): Promise<{ path: StoredEntry<TreeEntry>[]; omitted?: OmittedHistory }> {
  return storage.getCompactionPath
    ? storage.getCompactionPath(leafId, options.keepRecentTokens ?? DEFAULT_KEEP_RECENT_TOKENS)
    : storage.getContextPath(leafId).then((path) => ({ path }));
}

/**
 * Compacts the current branch: summarizes what the kept part drops and appends the compaction at
 * the leaf. The branch may move while the summary is written; the compaction then goes at the
 * new leaf, carrying the system messages of the branch it lands on. If the kept part is no longer
 * on that branch (with `retainTail`: if the branch moved at all), nothing is written and the
 * error is `leaf_conflict`; if the branch was compacted meanwhile, `nothing_to_compact`.
 */
export async function compactSession(
  storage: CompactionStorage,
  options: CompactOptions = {},
): Promise<StoredEntry<CompactionEntry>> {
  const leafId = await storage.getLeafId();
  if (leafId === null) throw new SessionError("nothing_to_compact", "the session has no leaf");
  const { path, omitted } = await compactionPath(storage, leafId, options);
  const preparation = prepareCompaction(path, options, omitted);
  const result = await summaryText(options, "summarizer_failed", {
    kind: "compaction",
    messages: preparation.messagesToSummarize,
    turnPrefix: preparation.turnPrefixMessages,
    previousSummary: preparation.previousSummary,
    customInstructions: options.customInstructions,
    readFiles: preparation.readFiles,
    modifiedFiles: preparation.modifiedFiles,
  });
  const landing = await landingLeaf(storage, leafId, path, preparation.firstKeptEntryId, options);
  if (landing.leafId !== leafId) {
    const moved = currentSystemMessage(projectContext(landing.path).flatMap((p) => p.messages));
    if (moved) preparation.systemMessage = moved;
    else delete preparation.systemMessage;
  }
  const entry: EntryInput = {
    type: "compaction",
    summary: result.text,
    tokensBefore: preparation.tokensBefore,
    firstKeptEntryId: preparation.firstKeptEntryId,
    details: { readFiles: preparation.readFiles, modifiedFiles: preparation.modifiedFiles },
    ...(result.usage ? { usage: result.usage } : {}),
    ...(preparation.retainedTail ? { retainedTail: preparation.retainedTail } : {}),
    // The timestamp it leads the compacted context with is the compaction's own (pi 1.6).
    ...(preparation.systemMessage
      ? { systemMessage: { ...preparation.systemMessage, timestamp: Date.now() } }
      : {}),
  };
  try {
    // Written where it was planned for: a move since is a conflict.
    const stored = await appendOne(storage, entry, { expectedLeafId: landing.leafId });
    return stored as StoredEntry<CompactionEntry>;
  } catch (error) {
    if (error instanceof SessionError && error.code === "invalid_tree") {
      throw new SessionError(
        "leaf_conflict",
        "the branch moved while the summary was written; the kept part is no longer on it",
        { firstKeptEntryId: preparation.firstKeptEntryId },
      );
    }
    throw error;
  }
}

/**
 * Where a compaction planned at `leafId` over `path` lands once its summary is written: the leaf
 * then, with the path the compaction reads there when it moved. A retained tail copies the branch
 * as it was, so it is right only if nothing moved (`leaf_conflict`); a branch compacted meanwhile
 * has nothing left for this compaction to do (`nothing_to_compact`). Compacted meanwhile: its
 * latest compaction is neither on the path planned nor before the kept part (`firstKeptEntryId`)
 * on the branch it lands on, one the path planned may leave out (what an older compaction
 * dropped), so that a storage's pruned path decides as the whole branch does.
 */
async function landingLeaf(
  storage: CompactionStorage,
  leafId: string,
  path: readonly TreeEntry[],
  firstKeptEntryId: string,
  options: CompactOptions,
): Promise<{ leafId: string; path: readonly TreeEntry[] }> {
  const now = await storage.getLeafId();
  if (now === leafId) return { leafId, path };
  if (now === null || options.retainTail) {
    throw new SessionError("leaf_conflict", "the branch moved while the summary was written", {
      leafId: now,
    });
  }
  const landing = (await compactionPath(storage, now, options)).path;
  const latest = latestCompaction(landing);
  const at = (id: string | undefined) => landing.findIndex((entry) => entry.id === id);
  const keptAt = at(firstKeptEntryId);
  const planned =
    latest === undefined ||
    path.some((entry) => entry.id === latest.id) ||
    (keptAt >= 0 && at(latest.id) < keptAt);
  if (!planned) {
    throw new SessionError("nothing_to_compact", "the branch was compacted while the summary was written");
  }
  return { leafId: now, path: landing };
}

/** What a caller asks of a navigation (the service's request body, beside the target). */
export const NavigateRequest = z
  .object({
    position: Position.optional(),
    summarize: z.boolean().optional().meta({ description: "summarize the branch left, under the target" }),
    summary: z
      .string()
      .optional()
      .meta({ description: "with summarize: the branch summary itself; no summarizer is called" }),
    customInstructions: z.string().optional(),
  })
  .strict();

export interface NavigateOptions extends z.infer<typeof NavigateRequest> {
  summarizer?: Summarizer;
  expectedLeafId?: string | null;
  signal?: AbortSignal;
}

export const NavigateResult = z.object({
  leafId: Id.nullable(),
  entry: stored(BranchSummaryEntry)
    .optional()
    .meta({ description: "the branch summary written, if any (it is then the leaf)" }),
  record: stored(LeafEntry)
    .optional()
    .meta({ description: "the leaf record written when the head simply moved" }),
});
export type NavigateResult = z.infer<typeof NavigateResult>;

/**
 * Moves the head to `targetId`. With `summarize`, the entries from the
 * old leaf back to the common ancestor are summarized into a `branch_summary` under the target,
 * which becomes the leaf; if the summarizer fails nothing changes (`branch_summary_failed`), so
 * the caller can navigate without a summary.
 */
export async function navigateSession(
  storage: NavigationStorage,
  targetId: string | null,
  options: NavigateOptions = {},
): Promise<NavigateResult> {
  if (!options.summarize) {
    const record = await storage.setLeafId(targetId, {
      position: options.position,
      expectedLeafId: options.expectedLeafId,
    });
    return { leafId: record.targetId, record };
  }
  const oldLeaf = await storage.getLeafId();
  checkExpectedLeaf({ leafId: oldLeaf }, options.expectedLeafId);
  const target = headFor(
    targetId,
    targetId === null ? undefined : await storage.getEntry(targetId),
    options.position,
  );
  // The abandoned part runs back to the common ancestor with the entry navigated to, even when
  // the head goes to its parent (`before`): that entry is where the user goes, not what is left.
  const preparation = await abandoned(storage, oldLeaf, targetId);
  if (preparation.entries.length === 0) {
    const record = await storage.setLeafId(target, { expectedLeafId: oldLeaf });
    return { leafId: record.targetId, record };
  }
  const result = await summaryText(options, "branch_summary_failed", {
    kind: "branch",
    messages: preparation.messages,
    customInstructions: options.customInstructions,
    readFiles: preparation.readFiles,
    modifiedFiles: preparation.modifiedFiles,
  });
  const stored = await appendOne(
    storage,
    {
      type: "branch_summary",
      parentId: target,
      // The leaf that was left (pi 1.6; pi before 1.6 named the entry navigated to).
      fromId: oldLeaf ?? "root",
      summary: result.text,
      details: { readFiles: preparation.readFiles, modifiedFiles: preparation.modifiedFiles },
      ...(result.usage ? { usage: result.usage } : {}),
    },
    { expectedLeafId: oldLeaf },
  );
  return { leafId: stored.id, entry: stored as StoredEntry<BranchSummaryEntry> };
}

/**
 * The summary to write: the caller's text as given, or the summarizer's with the file lists under
 * it. A summarizer failure becomes `failure` (nothing has been written at that point).
 */
async function summaryText(
  options: { summary?: string; summarizer?: Summarizer; signal?: AbortSignal },
  failure: "summarizer_failed" | "branch_summary_failed",
  request: SummaryRequest,
): Promise<SummaryResult> {
  if (options.summary !== undefined) return { text: options.summary };
  if (!options.summarizer) throw new SessionError("invalid_request", "give a summary or a summarizer");
  try {
    const generated = await options.summarizer.summarize(request, options.signal);
    return { ...generated, text: generated.text + formatFileLists(request) };
  } catch (error) {
    // The failure's message, without a stack.
    const reason = error instanceof Error ? error.message : String(error);
    throw new SessionError(
      failure,
      `the ${failure === "summarizer_failed" ? "summarizer" : "branch summary"} failed: ${reason}`,
      { summarizer: options.summarizer.name },
    );
  }
}
