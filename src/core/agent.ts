import { DEFAULT_KEEP_RECENT_TOKENS, estimatePathTokens } from "./compaction";
import type { CompactionEntry, StoredEntry } from "./entries";
import { SessionError } from "./errors";
import type { Session } from "./session";
import type { Summarizer } from "./summarizers/summarizer";

/*
 * Helpers for agent loops: compact before the context overflows.
 */

export interface CompactIfNeededOptions {
  contextWindow: number;
  /** Room kept free for the next reply (default 16,384). */
  reserveTokens?: number;
  keepRecentTokens?: number;
  /** Used in place of the storage's own (the service's) or, in memory and files, required. */
  summarizer?: Summarizer;
  customInstructions?: string;
}

export type CompactIfNeededResult =
  | { compacted: false; tokens: number }
  | { compacted: true; tokens: number; entry: StoredEntry<CompactionEntry> };

/**
 * Compacts when the context estimate (the same one the service uses: the last reply's reported
 * usage plus estimates after it, unless an edit or a compaction came after that reply, as in
 * pi 1.6) passes `contextWindow - reserveTokens`.
 */
export async function compactIfNeeded(
  session: Session,
  options: CompactIfNeededOptions,
): Promise<CompactIfNeededResult> {
  const reserve = options.reserveTokens ?? 16_384;
  const tokens = estimatePathTokens(await session.storage.getContextPath());
  if (tokens <= options.contextWindow - reserve) return { compacted: false, tokens };
  try {
    const entry = await session.compact({
      keepRecentTokens: options.keepRecentTokens ?? DEFAULT_KEEP_RECENT_TOKENS,
      ...(options.summarizer ? { summarizer: options.summarizer } : {}),
      ...(options.customInstructions ? { customInstructions: options.customInstructions } : {}),
    });
    return { compacted: true, tokens, entry };
  } catch (error) {
    if (error instanceof SessionError && error.code === "nothing_to_compact")
      return { compacted: false, tokens };
    throw error;
  }
}
