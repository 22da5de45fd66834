import * as z from "zod";
import { ID_PATTERN } from "./ids";
import { MAX_NAME_CHARS } from "./limits";
import {
  AgentMessage,
  ImageContent,
  SummaryUsage,
  TextContent,
  ThinkingContent,
  ThinkingLevel,
  ToolCall,
  Usage,
} from "./messages";
import { SystemMessage } from "./system-messages";

export const Id = z.string().regex(ID_PATTERN, "must be 1-128 characters of A-Z a-z 0-9 . _ : -").meta({
  description: "1-128 characters of A-Z a-z 0-9 . _ : -",
  example: "01939f3e-5b8a-7c3d-9e2f-0a1b2c3d4e5f",
});

/** A session's name, or a label's text. */
export const Name = z.string().max(MAX_NAME_CHARS);

export const Timestamp = z.iso
  .datetime({ offset: true })
  .meta({ description: "ISO 8601", example: "2026-01-01T12:00:00.000Z" });

/*
 * Each entry type is declared once as its own fields; `variants` derives the stored form (id,
 * parentId and timestamp present) and the input form (the store fills what is left out).
 */

const storedBase = { id: Id, parentId: Id.nullable(), timestamp: Timestamp };
const inputBase = { id: Id.optional(), parentId: Id.nullable().optional(), timestamp: Timestamp.optional() };

function variants<T extends z.ZodRawShape>(fields: T) {
  return {
    stored: z.looseObject({ ...storedBase, ...fields }),
    input: z.looseObject({ ...inputBase, ...fields }),
  };
}

const message = variants({ type: z.literal("message"), message: AgentMessage });
const modelChange = variants({ type: z.literal("model_change"), provider: z.string(), modelId: z.string() });
const thinkingLevelChange = variants({
  type: z.literal("thinking_level_change"),
  thinkingLevel: ThinkingLevel,
});
const activeToolsChange = variants({
  type: z.literal("active_tools_change"),
  activeToolNames: z.array(z.string()),
});
const compaction = variants({
  type: z.literal("compaction"),
  summary: z.string(),
  tokensBefore: z.number().nonnegative(),
  firstKeptEntryId: Id.optional().meta({
    description: "the first entry kept before the compaction; the compaction's own id keeps none",
  }),
  retainedTail: z.array(AgentMessage).optional(),
  // pi's type leaves it open: a compaction an extension wrote carries whatever it chose.
  details: z.unknown().optional().meta({
    description: "the built-in compaction's { readFiles, modifiedFiles }; anything an extension chose",
  }),
  usage: SummaryUsage.optional(),
  fromHook: z.boolean().optional(),
  systemMessage: SystemMessage.optional().meta({
    description: "pi 1.6: the prompt and tools replayed at the compaction; it leads the compacted context",
  }),
});
const branchSummary = variants({
  type: z.literal("branch_summary"),
  summary: z.string(),
  fromId: z.string().meta({
    description:
      'the leaf that was left (pi 1.6 and this store; earlier pi wrote the entry the branch was left for), or "root"',
  }),
  details: z.unknown().optional(),
  usage: SummaryUsage.optional(),
  fromHook: z.boolean().optional(),
});
const custom = variants({ type: z.literal("custom"), customType: z.string(), data: z.unknown().optional() });
const customMessage = variants({
  type: z.literal("custom_message"),
  customType: z.string(),
  content: z.union([z.string(), z.array(z.discriminatedUnion("type", [TextContent, ImageContent]))]),
  display: z.boolean(),
  details: z.unknown().optional(),
});
const label = variants({
  type: z.literal("label"),
  targetId: Id,
  label: Name.optional().meta({ description: "absent or blank clears the label" }),
});
const usage = variants({
  type: z.literal("usage"),
  kind: z.string().meta({ description: 'what the tokens were spent on, e.g. "cache_warm"' }),
  provider: z.string(),
  model: z.string(),
  usage: Usage,
  note: z.string().optional(),
});
/** What a context edit may put in place of a message's content. */
export const EditedContent = z.union([
  z.string(),
  z.array(z.discriminatedUnion("type", [TextContent, ImageContent, ThinkingContent, ToolCall])),
]);
const contextEdit = variants({
  type: z.literal("context_edit"),
  targetId: Id,
  replacement: z.looseObject({ content: EditedContent }).nullable().meta({
    description: "null leaves the target out of the context; otherwise its content is replaced",
  }),
});
const sessionInfo = variants({
  type: z.literal("session_info"),
  name: Name.optional().meta({ description: "absent or blank clears the name" }),
});

export const MessageEntry = message.stored;
export const ModelChangeEntry = modelChange.stored;
export const ThinkingLevelChangeEntry = thinkingLevelChange.stored;
export const ActiveToolsChangeEntry = activeToolsChange.stored;
export const CompactionEntry = compaction.stored;
export const BranchSummaryEntry = branchSummary.stored;
export const CustomEntry = custom.stored;
export const CustomMessageEntry = customMessage.stored;
export const LabelEntry = label.stored;
export const SessionInfoEntry = sessionInfo.stored;
export const UsageEntry = usage.stored;
export const ContextEditEntry = contextEdit.stored;
/** A durable record of a head move. Never a tree node: its own parentId is always null. */
export const LeafEntry = z.looseObject({
  type: z.literal("leaf"),
  id: Id,
  parentId: z.null(),
  timestamp: Timestamp,
  targetId: Id.nullable(),
});

export const SessionEntry = z.discriminatedUnion("type", [
  MessageEntry,
  ModelChangeEntry,
  ThinkingLevelChangeEntry,
  ActiveToolsChangeEntry,
  CompactionEntry,
  BranchSummaryEntry,
  CustomEntry,
  CustomMessageEntry,
  LabelEntry,
  SessionInfoEntry,
  UsageEntry,
  ContextEditEntry,
  LeafEntry,
]);

/** What a caller may append: any tree node; `id`, `parentId` and `timestamp` are optional. */
export const EntryInput = z.discriminatedUnion("type", [
  message.input,
  modelChange.input,
  thinkingLevelChange.input,
  activeToolsChange.input,
  compaction.input,
  branchSummary.input,
  custom.input,
  customMessage.input,
  label.input,
  sessionInfo.input,
  usage.input,
  contextEdit.input,
]);

export type MessageEntry = z.infer<typeof MessageEntry>;
export type ModelChangeEntry = z.infer<typeof ModelChangeEntry>;
export type ThinkingLevelChangeEntry = z.infer<typeof ThinkingLevelChangeEntry>;
export type ActiveToolsChangeEntry = z.infer<typeof ActiveToolsChangeEntry>;
export type CompactionEntry = z.infer<typeof CompactionEntry>;
export type BranchSummaryEntry = z.infer<typeof BranchSummaryEntry>;
export type CustomEntry = z.infer<typeof CustomEntry>;
export type CustomMessageEntry = z.infer<typeof CustomMessageEntry>;
export type LabelEntry = z.infer<typeof LabelEntry>;
export type SessionInfoEntry = z.infer<typeof SessionInfoEntry>;
export type UsageEntry = z.infer<typeof UsageEntry>;
export type ContextEditEntry = z.infer<typeof ContextEditEntry>;
export type LeafEntry = z.infer<typeof LeafEntry>;
export type SessionEntry = z.infer<typeof SessionEntry>;
/** A tree node: every entry but a `leaf` record. */
export type TreeEntry = Exclude<SessionEntry, LeafEntry>;
export type EntryInput = z.infer<typeof EntryInput>;
export type EntryType = SessionEntry["type"];

/** An entry as the store returns it: `seq` orders entries by append, per session. */
export type StoredEntry<E extends SessionEntry = SessionEntry> = E & { seq: number };

export const ENTRY_TYPES = [
  "message",
  "model_change",
  "thinking_level_change",
  "active_tools_change",
  "compaction",
  "branch_summary",
  "custom",
  "custom_message",
  "label",
  "session_info",
  "usage",
  "context_edit",
  "leaf",
] as const satisfies readonly EntryType[];
export const EntryType = z.enum(ENTRY_TYPES);

export function isTreeEntry<E extends SessionEntry>(entry: E): entry is Exclude<E, LeafEntry> {
  return entry.type !== "leaf";
}

/** The schema of an entry as stored: the entry and its `seq`. */
export function stored<S extends z.ZodType<SessionEntry>>(schema: S) {
  return schema.and(z.object({ seq: z.number().int() }));
}

export const StoredEntry = stored(SessionEntry).meta({ id: "StoredEntry" });

/** `entry` without its store-assigned `seq`. */
export function withoutSeq(entry: StoredEntry | SessionEntry): SessionEntry {
  if (!("seq" in entry)) return entry;
  const { seq: _seq, ...rest } = entry;
  return rest as SessionEntry;
}
