import * as z from "zod";
import { applyContextEdit, latestEdits } from "./context-edits";
import type { CompactionEntry, ContextEditEntry, CustomEntry, TreeEntry } from "./entries";
import { checkpointMessages, frameworkMessages, messagesCheckpoint } from "./framework-custom-messages";
import type { AgentMessage } from "./messages";
import { AgentMessage as AgentMessageSchema, ThinkingLevel } from "./messages";

export const ModelRef = z.object({ provider: z.string(), modelId: z.string() });
export type ModelRef = z.infer<typeof ModelRef>;

/** What to send to a model: the system prompt, the messages, and the settings of the path. */
export const SessionContext = z
  .object({
    systemPrompt: z.string(),
    // pi-ai's roles checked, any other role kept as it is.
    messages: z.array(AgentMessageSchema),
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
  return path.findLast((entry): entry is CompactionEntry => entry.type === "compaction");
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
 * Whether a path entry is a system message: those a compaction keeps before it are dropped, since
 * the compaction carries the prompt they replay to (pi 1.6). Takes a stored row's `role` too.
 */
export function isSystemMessageEntry(entry: { type: string; role?: unknown; message?: unknown }): boolean {
  if (entry.type !== "message") return false;
  const role = entry.message ? (entry.message as { role?: unknown }).role : entry.role;
  return role === "system";
}

/**
 * The latest compaction on the path replaces what it summarized: the compaction first, then what
 * it kept before it (see `keptFrom`) but its system messages, then everything after it.
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
  const kept = path.slice(from, at).filter((entry) => !isSystemMessageEntry(entry));
  return [compaction, ...kept, ...path.slice(at + 1)];
}

/**
 * A message whose content is null or missing (old or hand-edited files) as pi reads it: an empty
 * prompt for a system message, no blocks for user, assistant and tool-result messages.
 */
function withContent(message: AgentMessage): AgentMessage {
  if ((message as { content?: unknown }).content != null) return message;
  if (message.role === "system") return { ...message, content: "" };
  if (message.role === "user" || message.role === "assistant" || message.role === "toolResult") {
    return { ...message, content: [] } as AgentMessage;
  }
  return message;
}

/** The message a compaction's summary stands as (pi's `compactionSummary` role). */
export function compactionSummary(entry: CompactionEntry): AgentMessage {
  const { summary, tokensBefore } = entry;
  return { role: "compactionSummary", summary, tokensBefore, timestamp: Date.parse(entry.timestamp) };
}

/**
 * Where a context's messages start: its compaction, or the checkpoint whose messages value it holds
 * (`messagesCheckpoint`), which stands for everything before it as a compaction does.
 */
interface ContextStart {
  compactionId: string | undefined;
  checkpointId: string | undefined;
}

function projectEntry(
  entry: TreeEntry,
  index: number,
  entries: readonly TreeEntry[],
  start: ContextStart,
  options: BuildContextOptions,
): AgentMessage[] {
  switch (entry.type) {
    case "message":
      return [withContent(entry.message)];
    case "custom_message": {
      const read = frameworkMessages(entry);
      if (read) return read;
      const message: AgentMessage = {
        role: "custom",
        customType: entry.customType,
        content: entry.content,
        display: entry.display,
        timestamp: Date.parse(entry.timestamp),
      };
      if (entry.details !== undefined) message.details = entry.details;
      return [message];
    }
    case "compaction":
      if (entry.id !== start.compactionId) return [];
      return [
        ...(entry.systemMessage ? [entry.systemMessage as AgentMessage] : []),
        compactionSummary(entry),
        ...(entry.retainedTail ?? []),
      ];
    case "branch_summary": {
      const { summary, fromId } = entry;
      return summary
        ? [{ role: "branchSummary", summary, fromId, timestamp: Date.parse(entry.timestamp) }]
        : [];
    }
    case "custom":
      if (entry.id === start.checkpointId) return checkpointMessages(entry);
      return options.entryProjectors?.[entry.customType]?.(entry, index, entries) ?? [];
    default:
      return [];
  }
}

/**
 * The model an entry sets as the session's: a model change's, or the provider and model of a
 * reply that names its model. A reply saved by a framework that was not told its model (an empty
 * model id, or the AI SDK's `ai-sdk` stand-in for a provider) sets none, nor does a LangGraph
 * message naming no model stored before it was recorded so (`unknown` for provider and model).
 */
export function modelSetBy(entry: TreeEntry): ModelRef | undefined {
  if (entry.type === "model_change") return { provider: entry.provider, modelId: entry.modelId };
  if (entry.type !== "message" || entry.message.role !== "assistant") return undefined;
  const { provider, model: modelId } = entry.message as { provider: string; model: string };
  const named = modelId && provider !== "ai-sdk" && !(provider === "unknown" && modelId === "unknown");
  return named ? { provider, modelId } : undefined;
}

/**
 * Settings that hold for the whole path, whatever compaction dropped: the latest thinking level,
 * model (see `modelSetBy`) and active tools.
 */
export function deriveState(
  path: readonly TreeEntry[],
  from: ContextSettings = { thinkingLevel: "off", model: null, activeToolNames: null },
): ContextSettings {
  let { thinkingLevel, model, activeToolNames } = from;
  for (const entry of path) {
    if (entry.type === "thinking_level_change") thinkingLevel = entry.thinkingLevel;
    else if (entry.type === "active_tools_change") activeToolNames = [...entry.activeToolNames];
    else model = modelSetBy(entry) ?? model;
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
  return {
    systemPrompt: options.systemPrompt ?? options.sessionSystemPrompt ?? "",
    messages: projectContext(path, options).flatMap((projected) => projected.messages),
    ...deriveState(path),
  };
}

/** An entry of a context and the messages it contributes (none when it projects nothing or an edit left it out). */
export interface ProjectedEntry {
  entry: TreeEntry;
  messages: AgentMessage[];
}

/** The entries a path's context is made of (compaction applied), each with its messages (edits applied). */
export function projectContext(
  path: readonly TreeEntry[],
  options: Pick<BuildContextOptions, "entryProjectors" | "transforms"> = {},
): ProjectedEntry[] {
  const transforms = options.transforms ?? [defaultContextEntryTransform];
  let entries: readonly TreeEntry[] = path;
  for (const transform of transforms) entries = transform(entries);
  const start = { compactionId: latestCompaction(path)?.id, checkpointId: messagesCheckpoint(entries) };
  const from = startsAt(entries, start.checkpointId);
  const edits = latestEdits(entries);
  return entries.map((entry, index) => ({
    entry,
    messages:
      index < from
        ? []
        : applyContextEdit(projectEntry(entry, index, entries, start, options), edits.get(entry.id)),
  }));
}

/** The index of the checkpoint among `entries`; 0 when it is not among them. */
function startsAt(entries: readonly TreeEntry[], checkpointId: string | undefined): number {
  return checkpointId === undefined
    ? 0
    : Math.max(
        0,
        entries.findIndex((entry) => entry.id === checkpointId),
      );
}

/**
 * Each entry of a path with the messages it shows on its own (each context edit on itself only;
 * only the compaction `compactionOf` names projects): a LangGraph checkpoint holding the messages
 * as a value (`messagesCheckpoint`) shows them, standing for the entries before it, which show none.
 */
export function ownMessages(
  path: readonly TreeEntry[],
  compactionOf: (entry: TreeEntry) => string | undefined = () => undefined,
): AgentMessage[][] {
  const checkpointId = messagesCheckpoint(path);
  const from = startsAt(path, checkpointId);
  return path.map((entry, index) =>
    index < from ? [] : projectEntries([entry], compactionOf(entry), { checkpointId: checkpointId ?? null }),
  );
}

export interface ProjectOptions extends Pick<BuildContextOptions, "entryProjectors"> {
  /**
   * The latest context edit of each target in the whole context (`latestEdits`); by default those
   * among `entries`, which is right only when `entries` are the whole context.
   */
  edits?: ReadonlyMap<string, ContextEditEntry>;
  /**
   * The checkpoint whose messages value the whole context holds (`messagesCheckpoint`), null for
   * none; by default the one among `entries`, which is right only when `entries` are the whole
   * context. Entries before it among `entries` project nothing.
   */
  checkpointId?: string | null;
}

/**
 * The messages entries project to, with their context edits applied. Only the compaction
 * `compactionId` projects (its system message, summary and retained tail); any other compaction
 * projects to nothing.
 */
export function projectEntries(
  entries: readonly TreeEntry[],
  compactionId: string | undefined,
  options: ProjectOptions = {},
): AgentMessage[] {
  const edits = options.edits ?? latestEdits(entries);
  const checkpointId =
    options.checkpointId === undefined ? messagesCheckpoint(entries) : (options.checkpointId ?? undefined);
  const start = { compactionId, checkpointId };
  return entries
    .slice(startsAt(entries, checkpointId))
    .flatMap((entry, index, from) =>
      applyContextEdit(projectEntry(entry, index, from, start, options), edits.get(entry.id)),
    );
}
