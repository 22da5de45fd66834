import { headFor } from "./append";
import type { CompactionSettings } from "./compaction";
import { formatFileLists, prepareBranchSummary, prepareCompaction } from "./compaction";
import type {
  BranchSummaryEntry,
  CompactionEntry,
  EntryInput,
  LeafEntry,
  StoredEntry,
  TreeEntry,
} from "./entries";
import { SessionError } from "./errors";
import type { Session } from "./session";
import type { Position } from "./storage";
import type { Summarizer, SummaryRequest, SummaryResult } from "./summarizers/summarizer";

export interface CompactOptions extends CompactionSettings {
  /** The summary text itself; no summarizer is called. */
  summary?: string;
  customInstructions?: string;
  summarizer?: Summarizer;
  signal?: AbortSignal;
}

/** The path compaction and context work on: pruned by storages that can, whole otherwise. */
async function contextPath(session: Session, leafId: string): Promise<TreeEntry[]> {
  const storage = session.storage;
  if (storage.getContextPath) return (await storage.getContextPath(leafId)).path;
  return storage.getBranch(leafId);
}

/**
 * Compacts the current branch (SPEC §4): summarizes what the kept part drops and appends the
 * compaction at the leaf. If the branch moved meanwhile so that the kept part is no longer on it
 * (with `retainTail`: if it moved at all), nothing is written and the error is `leaf_conflict`.
 */
export async function compactSession(
  session: Session,
  options: CompactOptions = {},
): Promise<StoredEntry<CompactionEntry>> {
  const leafId = await session.getLeafId();
  if (leafId === null) throw new SessionError("nothing_to_compact", "the session has no leaf");
  const preparation = prepareCompaction(await contextPath(session, leafId), options);
  const result = await summaryText(options, "summarizer_failed", {
    kind: "compaction",
    messages: preparation.messagesToSummarize,
    turnPrefix: preparation.turnPrefixMessages,
    previousSummary: preparation.previousSummary,
    customInstructions: options.customInstructions,
    readFiles: preparation.readFiles,
    modifiedFiles: preparation.modifiedFiles,
  });
  const entry: EntryInput = {
    type: "compaction",
    summary: result.text,
    tokensBefore: preparation.tokensBefore,
    firstKeptEntryId: preparation.firstKeptEntryId,
    details: { readFiles: preparation.readFiles, modifiedFiles: preparation.modifiedFiles },
    ...(result.usage ? { usage: result.usage } : {}),
    ...(preparation.retainedTail ? { retainedTail: preparation.retainedTail } : {}),
  };
  try {
    // A retained tail copies the branch as it was: it is only right if nothing moved since.
    const stored = await session.appendEntry(entry, options.retainTail ? { expectedLeafId: leafId } : {});
    return stored as StoredEntry<CompactionEntry>;
  } catch (error) {
    if (error instanceof SessionError && error.code === "invalid_tree") {
      throw new SessionError(
        "leaf_conflict",
        "the branch moved while the summary was written; the kept part is no longer on it",
        {
          firstKeptEntryId: preparation.firstKeptEntryId,
        },
      );
    }
    throw error;
  }
}

export interface NavigateOptions {
  position?: Position;
  /** Summarize the branch being left and append the summary under the target. */
  summarize?: boolean;
  /** The branch summary text itself; no summarizer is called. */
  summary?: string;
  customInstructions?: string;
  summarizer?: Summarizer;
  expectedLeafId?: string | null;
  signal?: AbortSignal;
}

export interface NavigateResult {
  leafId: string | null;
  /** The branch summary written, if any (it is then the leaf). */
  entry?: StoredEntry<BranchSummaryEntry>;
  /** The `leaf` record written when the head simply moved. */
  record?: StoredEntry<LeafEntry>;
}

/**
 * Moves the head to `targetId` (SPEC §4, Branch summary). With `summarize`, the entries from the
 * old leaf back to the common ancestor are summarized into a `branch_summary` under the target,
 * which becomes the leaf; if the summarizer fails nothing changes (`branch_summary_failed`), so
 * the caller can navigate without a summary.
 */
export async function navigateSession(
  session: Session,
  targetId: string | null,
  options: NavigateOptions = {},
): Promise<NavigateResult> {
  if (!options.summarize) {
    const record = await session.setLeafId(targetId, {
      position: options.position,
      expectedLeafId: options.expectedLeafId,
    });
    return { leafId: record.targetId, record };
  }
  const oldLeaf = await session.getLeafId();
  if (options.expectedLeafId !== undefined && options.expectedLeafId !== oldLeaf) {
    throw new SessionError("leaf_conflict", "the leaf has moved", {
      expected: options.expectedLeafId,
      actual: oldLeaf,
    });
  }
  const target = headFor(
    targetId,
    targetId === null ? undefined : await session.getEntry(targetId),
    options.position,
  );
  // The abandoned part runs back to the common ancestor with the entry navigated to, even when
  // the head goes to its parent (`before`): that entry is where the user goes, not what is left.
  const [from, to] = await Promise.all([
    oldLeaf === null ? [] : session.getBranch(oldLeaf),
    targetId === null ? [] : session.getBranch(targetId),
  ]);
  const preparation = prepareBranchSummary(from, to);
  if (preparation.entries.length === 0) {
    const record = await session.setLeafId(target, { expectedLeafId: oldLeaf });
    return { leafId: record.targetId, record };
  }
  const result = await summaryText(options, "branch_summary_failed", {
    kind: "branch",
    messages: preparation.messages,
    customInstructions: options.customInstructions,
    readFiles: preparation.readFiles,
    modifiedFiles: preparation.modifiedFiles,
  });
  const stored = await session.appendEntry(
    {
      type: "branch_summary",
      parentId: target,
      fromId: target ?? "root",
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
    throw new SessionError(
      failure,
      `the ${failure === "summarizer_failed" ? "summarizer" : "branch summary"} failed: ${describe(error)}`,
      {
        summarizer: options.summarizer.name,
      },
    );
  }
}

/** A failure's message for an error detail, without a stack. */
function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
