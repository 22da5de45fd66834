import type { CompactionEntry, CustomEntry, TreeEntry } from "./entries";
import type { AgentMessage, ThinkingLevel } from "./messages";

export interface ModelRef {
  provider: string;
  modelId: string;
}

/** What to send to a model (SPEC §6). */
export interface SessionContext {
  systemPrompt: string;
  messages: AgentMessage[];
  thinkingLevel: ThinkingLevel;
  model: ModelRef | null;
  activeToolNames: string[] | null;
}

/** Turns a `custom` entry of one `customType` into messages (none by default). */
export type EntryProjector = (
  entry: CustomEntry,
  index: number,
  entries: readonly TreeEntry[],
) => AgentMessage[];

/** Rewrites the path before projection; the default applies the latest compaction. */
export type ContextEntryTransform = (entries: readonly TreeEntry[]) => TreeEntry[];

export interface BuildContextOptions {
  /** Overrides the session's system prompt. */
  systemPrompt?: string;
  entryProjectors?: Record<string, EntryProjector>;
  /** Replace the default `[defaultContextEntryTransform]`; include it to keep compaction. */
  transforms?: readonly ContextEntryTransform[];
}

export function latestCompaction(path: readonly TreeEntry[]): CompactionEntry | undefined {
  for (let i = path.length - 1; i >= 0; i--) {
    const entry = path[i] as TreeEntry;
    if (entry.type === "compaction") return entry;
  }
  return undefined;
}

/**
 * The latest compaction on the path replaces what it summarized: with `retainedTail`, the
 * compaction and everything after it; otherwise the compaction, the path from `firstKeptEntryId`
 * up to it, then everything after it. A `firstKeptEntryId` off the path keeps nothing before the
 * compaction (as in pi).
 */
export function defaultContextEntryTransform(path: readonly TreeEntry[]): TreeEntry[] {
  const compaction = latestCompaction(path);
  if (!compaction) return [...path];
  const at = path.lastIndexOf(compaction);
  const after = path.slice(at + 1);
  if (compaction.retainedTail) return [compaction, ...after];
  const firstKept =
    compaction.firstKeptEntryId === undefined
      ? -1
      : path.findIndex((e) => e.id === compaction.firstKeptEntryId);
  const kept = firstKept >= 0 && firstKept < at ? path.slice(firstKept, at) : [];
  return [compaction, ...kept, ...after];
}

function millis(timestamp: string): number {
  return Date.parse(timestamp);
}

function projectEntry(
  entry: TreeEntry,
  index: number,
  entries: readonly TreeEntry[],
  compactionId: string | undefined,
  options: BuildContextOptions,
): AgentMessage[] {
  switch (entry.type) {
    case "message":
      return [entry.message];
    case "custom_message": {
      const message: AgentMessage = {
        role: "custom",
        customType: entry.customType,
        content: entry.content,
        display: entry.display,
        timestamp: millis(entry.timestamp),
      };
      if (entry.details !== undefined) message.details = entry.details;
      return [message];
    }
    case "compaction":
      if (entry.id !== compactionId) return [];
      return [
        {
          role: "compactionSummary",
          summary: entry.summary,
          tokensBefore: entry.tokensBefore,
          timestamp: millis(entry.timestamp),
        },
        ...(entry.retainedTail ?? []),
      ];
    case "branch_summary":
      if (!entry.summary) return [];
      return [
        {
          role: "branchSummary",
          summary: entry.summary,
          fromId: entry.fromId,
          timestamp: millis(entry.timestamp),
        },
      ];
    case "custom":
      return options.entryProjectors?.[entry.customType]?.(entry, index, entries) ?? [];
    default:
      return [];
  }
}

/** Settings that hold for the whole path, whatever compaction dropped (SPEC §4 step 4). */
export function deriveState(
  path: readonly TreeEntry[],
  from: Omit<SessionContext, "systemPrompt" | "messages"> = {
    thinkingLevel: "off",
    model: null,
    activeToolNames: null,
  },
): Omit<SessionContext, "systemPrompt" | "messages"> {
  let { thinkingLevel, model, activeToolNames } = from;
  for (const entry of path) {
    if (entry.type === "thinking_level_change") thinkingLevel = entry.thinkingLevel;
    else if (entry.type === "model_change") model = { provider: entry.provider, modelId: entry.modelId };
    else if (entry.type === "active_tools_change") activeToolNames = [...entry.activeToolNames];
    else if (entry.type === "message" && entry.message.role === "assistant") {
      const { provider, model: modelId } = entry.message as { provider: string; model: string };
      model = { provider, modelId };
    }
  }
  return { thinkingLevel, model, activeToolNames };
}

/**
 * buildContext (SPEC §4) over a path root → leaf. The path may omit entries that can affect
 * neither the messages nor the derived settings (storages pass such a pruned path to stay
 * independent of history length); custom `transforms` need the whole path.
 */
export function buildSessionContext(
  path: readonly TreeEntry[],
  options: BuildContextOptions & { sessionSystemPrompt?: string } = {},
): SessionContext {
  const transforms = options.transforms ?? [defaultContextEntryTransform];
  let entries: readonly TreeEntry[] = path;
  for (const transform of transforms) entries = transform(entries);
  return {
    systemPrompt: options.systemPrompt ?? options.sessionSystemPrompt ?? "",
    messages: projectEntries(entries, latestCompaction(path)?.id, options),
    ...deriveState(path),
  };
}

/**
 * The messages entries project to (SPEC §3). Only the compaction `compactionId` projects (with its
 * retained tail); any other compaction projects to nothing.
 */
export function projectEntries(
  entries: readonly TreeEntry[],
  compactionId: string | undefined,
  options: Pick<BuildContextOptions, "entryProjectors"> = {},
): AgentMessage[] {
  const messages: AgentMessage[] = [];
  entries.forEach((entry, index) => {
    for (const message of projectEntry(entry, index, entries, compactionId, options)) messages.push(message);
  });
  return messages;
}
