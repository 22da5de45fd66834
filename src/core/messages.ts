import * as z from "zod";

/*
 * pi-ai compatible messages. Known roles are validated field by field; every object is loose, so
 * fields an agent adds travel unchanged, and a message with any other `role` is kept as it came.
 * A field is required when building a context or deriving the model needs it, or when every pi
 * release since the coding agent's first (0.6) has written it; fields that older releases left out
 * are optional, so their files import and are kept exactly as written.
 */

/** The farthest a Date reaches either side of 1970, in milliseconds: a time beyond it has no date. */
export const MAX_DATE_MS = 8.64e15;

/** A message's time: Unix milliseconds a Date can hold, so that every export can write it. */
export const MessageTimestamp = z
  .number()
  .min(-MAX_DATE_MS)
  .max(MAX_DATE_MS)
  .meta({ description: "Unix milliseconds, at most ±8.64e15 (the range of a date)" });

/** A provider's creation time in Unix seconds, which as milliseconds a Date can hold. */
export const UnixSeconds = z
  .number()
  .min(-MAX_DATE_MS / 1000)
  .max(MAX_DATE_MS / 1000);

export const TextContent = z.looseObject({
  type: z.literal("text"),
  text: z.string(),
  textSignature: z.string().optional(),
});

export const ThinkingContent = z.looseObject({
  type: z.literal("thinking"),
  thinking: z.string(),
  thinkingSignature: z.string().optional(),
  redacted: z.boolean().optional(),
});

export const ImageContent = z.looseObject({
  type: z.literal("image"),
  data: z.string().meta({ description: "base64 image bytes" }),
  mimeType: z.string(),
});

export const ToolCall = z.looseObject({
  type: z.literal("toolCall"),
  id: z.string(),
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
});

export const Cost = z.looseObject({
  input: z.number(),
  output: z.number(),
  cacheRead: z.number(),
  cacheWrite: z.number(),
  total: z.number(),
});

/** `totalTokens` came with pi-ai in December 2025; sessions written before have none. */
export const Usage = z.looseObject({
  input: z.number(),
  output: z.number(),
  cacheRead: z.number(),
  cacheWrite: z.number(),
  totalTokens: z.number().optional(),
  cost: Cost.optional(),
});

/** Token usage of a generated summary: whatever the summarizer reported. */
export const SummaryUsage = z.looseObject({
  input: z.number().optional(),
  output: z.number().optional(),
  totalTokens: z.number().optional(),
});

const UserContent = z.union([z.string(), z.array(z.discriminatedUnion("type", [TextContent, ImageContent]))]);

export const UserMessage = z.looseObject({
  role: z.literal("user"),
  content: UserContent,
  timestamp: MessageTimestamp,
});

export const AssistantMessage = z.looseObject({
  role: z.literal("assistant"),
  content: z.array(z.discriminatedUnion("type", [TextContent, ThinkingContent, ToolCall])),
  api: z.string(),
  provider: z.string(),
  model: z.string(),
  usage: Usage,
  stopReason: z.string().meta({ description: "stop | length | toolUse | error | aborted | …" }),
  errorMessage: z.string().optional(),
  timestamp: MessageTimestamp,
});

export const ToolResultMessage = z.looseObject({
  role: z.literal("toolResult"),
  toolCallId: z.string(),
  toolName: z.string(),
  content: z.array(z.discriminatedUnion("type", [TextContent, ImageContent])),
  details: z.unknown().optional(),
  isError: z.boolean(),
  timestamp: MessageTimestamp,
});

/** Any role an agent adds (`custom`, `bashExecution`, `system`, …): only `role` is required. */
export const OtherMessage = z.looseObject({ role: z.string() });

export type TextContent = z.infer<typeof TextContent>;
export type ThinkingContent = z.infer<typeof ThinkingContent>;
export type ImageContent = z.infer<typeof ImageContent>;
export type ToolCall = z.infer<typeof ToolCall>;
export type Usage = z.infer<typeof Usage>;
export type SummaryUsage = z.infer<typeof SummaryUsage>;
export type UserMessage = z.infer<typeof UserMessage>;
export type AssistantMessage = z.infer<typeof AssistantMessage>;
export type ToolResultMessage = z.infer<typeof ToolResultMessage>;
export type OtherMessage = z.infer<typeof OtherMessage>;
export type AgentMessage = UserMessage | AssistantMessage | ToolResultMessage | OtherMessage;

/** A Map, so that a role named like an inherited property (`constructor`) is just an unknown role. */
const knownRoles = new Map<string, z.ZodType>([
  ["user", UserMessage],
  ["assistant", AssistantMessage],
  ["toolResult", ToolResultMessage],
]);

/**
 * Dispatches on `role`: a known role must match its schema (issues keep their paths), any other
 * role passes as it is. A plain union would report a failed known role as "matches no option".
 */
export const AgentMessage = OtherMessage.superRefine((message, ctx) => {
  const schema = knownRoles.get(message.role);
  if (!schema) return;
  const result = schema.safeParse(message);
  if (result.success) return;
  for (const issue of result.error.issues) ctx.addIssue({ ...issue, path: issue.path } as never);
}).meta({
  description:
    "A pi-ai message. Roles user, assistant and toolResult are validated; other roles are kept as sent.",
}) as unknown as z.ZodType<AgentMessage>;

export function isUserMessage(message: AgentMessage): message is UserMessage {
  return message.role === "user";
}

export function isAssistantMessage(message: AgentMessage): message is AssistantMessage {
  return message.role === "assistant";
}

export function isToolResultMessage(message: AgentMessage): message is ToolResultMessage {
  return message.role === "toolResult";
}

export const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh"] as const;
export const ThinkingLevel = z.enum(THINKING_LEVELS);
export type ThinkingLevel = z.infer<typeof ThinkingLevel>;

/** The text of a user-like message's content (string, or its text parts joined). */
export function contentText(content: unknown): string {
  return blockText(content, " ");
}

/** A string, or the text parts of an array joined by newlines (pi's `contentText`) or `separator`. */
export function blockText(content: unknown, separator = "\n"): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter(
      (part) => part && typeof part === "object" && part.type === "text" && typeof part.text === "string",
    )
    .map((part) => part.text as string)
    .join(separator);
}

/**
 * A message's token counts, each 0 when missing or not a count; `total` when the API reports one,
 * else their sum. Costs are not known here (0).
 */
export function usage(
  input: number,
  output: number,
  cacheRead: number,
  cacheWrite: number,
  total?: number,
): Usage {
  const clean = (n: number) => (Number.isFinite(n) && n > 0 ? n : 0);
  const u = {
    input: clean(input),
    output: clean(output),
    cacheRead: clean(cacheRead),
    cacheWrite: clean(cacheWrite),
  };
  return {
    ...u,
    totalTokens: total !== undefined && total > 0 ? total : u.input + u.output + u.cacheRead + u.cacheWrite,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

export const NO_USAGE: Usage = usage(0, 0, 0, 0);
