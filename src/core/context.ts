import * as z from "zod";
import type { CompactionEntry, CustomEntry, TreeEntry } from "./entries";
import type { AgentMessage } from "./messages";
import { AgentMessage as AgentMessageSchema, ThinkingLevel } from "./messages";

export const ModelRef = z.object({ provider: z.string(), modelId: z.string() });
export type ModelRef = z.infer<typeof ModelRef>;

/** A message as a context carries it: pi-ai's roles checked, any other role kept as it is. */
const ContextMessage: z.ZodType<AgentMessage> = AgentMessageSchema;

/** What to send to a model: the system prompt, the messages, and the settings of the path. */
export const SessionContext = z
  .object({
    systemPrompt: z.string(),
    messages: z.array(ContextMessage),
    thinkingLevel: ThinkingLevel,
    model: ModelRef.nullable(),
    activeToolNames: z.array(z.string()).nullable(),
  })
  .meta({ id: "SessionContext" });
export type SessionContext = z.infer<typeof SessionContext>;

/** What a context carries besides the system prompt and the messages: the path's settings. */
export type ContextSettings = Omit<SessionContext, "systemPrompt" | "messages">;

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
 * Where the context of a compacted path starts, as an index into the path's ids: the compaction's
 * first kept entry when it lies on the path before the compaction (at `at`), else the compaction
 * itself, which then keeps nothing before it (as in pi). A compaction with a retained tail carries
 * what it kept inside itself. Storages that walk only part of a path apply the same rule to the
 * part they walked, which must reach down to the first kept entry when it is on the path.
 */
export function keptFrom(
  ids: readonly string[],
  at: number,
  compaction: Pick<CompactionEntry, "firstKeptEntryId" | "retainedTail">,
): number {
  if (compaction.retainedTail || compaction.firstKeptEntryId === undefined) return at;
  const index = ids.indexOf(compaction.firstKeptEntryId);
  return index >= 0 && index < at ? index : at;
}

/**
 * The latest compaction on the path replaces what it summarized: the compaction first, then what
 * it kept before it (see `keptFrom`), then everything after it.
 */
export function defaultContextEntryTransform(path: readonly TreeEntry[]): TreeEntry[] {
  const compaction = latestCompaction(path);
  if (!compaction) return [...path];
  const at = path.lastIndexOf(compaction);
  const from = keptFrom(
    path.map((entry) => entry.id),
    at,
    compaction,
  );
  return [compaction, ...path.slice(from, at), ...path.slice(at + 1)];
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

/**
 * Settings that hold for the whole path, whatever compaction dropped: the latest thinking level,
 * model (a model change or an assistant message's provider and model) and active tools.
 */
export function deriveState(
  path: readonly TreeEntry[],
  from: ContextSettings = { thinkingLevel: "off", model: null, activeToolNames: null },
): ContextSettings {
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
 * The context of a path root → leaf. The path may omit entries that can affect
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
 * The messages entries project to. Only the compaction `compactionId` projects (with its
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
