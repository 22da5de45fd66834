import type { SessionContext } from "../context";
import type {
  AgentMessage,
  AssistantMessage,
  ImageContent,
  TextContent,
  ThinkingContent,
  ToolCall,
  ToolResultMessage,
} from "../messages";
import { contextSystemPrompt, developerMessageText, isDeveloperMessage } from "../system-messages";
import { toModelMessage } from "./pi-messages";
import type { ContextFormat, TargetModel } from "./target";
import { isSameModel, targetForFormat } from "./target";
import { stripLoneSurrogates, stripLoneSurrogatesDeep } from "./text";
import type { ToolCallIdRule } from "./tool-call-ids";
import { callIdPart, ToolCallIds } from "./tool-call-ids";

/*
 * The pass every target shares, so each converter only has to spell its API: a conversation
 * any API accepts, in user / assistant / tool-results turns.
 *
 * - pi's own messages become what pi sends for them (user messages in pi's wrappers).
 * - Developer messages (instructions an OpenAI agent keeps in the conversation, as Codex does) stay
 *   in place for OpenAI's APIs, which have that role; the others get their text in the system prompt.
 * - Assistant messages with nothing between them are one turn (a framework that kept each output
 *   item apart, one parallel call at a time), answered after the last of them.
 * - An errored or aborted assistant turn is left out together with its tool results (a result
 *   whose call is gone is a 400 at Anthropic: "unexpected tool_use_id").
 * - Every tool call is answered right after its turn, in call order: a missing result becomes an
 *   error result "No result provided" (also at the very end), a result with no call before it is
 *   left out, a second result for one call too. An error result that holds nothing says the tool
 *   failed with no output.
 * - Signatures, redacted thinking and encrypted reasoning go back only to the provider, API and
 *   model that made them; for any other model readable thinking becomes plain text and opaque
 *   reasoning is dropped.
 * - Tool-call ids are rewritten for the target through one allocator (see tool-call-ids.ts).
 * - Empty text and thinking blocks, and messages left empty, are dropped; lone surrogates are
 *   stripped from all text; images for a model without image input become a note.
 * Each message is visited once, so the work grows linearly with the conversation.
 */

/** AI SDK `providerOptions` kept on a block read from the AI SDK, replayed to the same model. */
export type ProviderOptions = Record<string, Record<string, unknown>>;

export interface NormalText {
  type: "text";
  text: string;
  /** Same model only: OpenAI Responses' message item (pi-ai's `{v, id, phase}`) or Gemini's thought signature. */
  textSignature?: string;
  providerOptions?: ProviderOptions;
}

export interface NormalThinking {
  type: "thinking";
  thinking: string;
  /** Same model only (another model's thinking arrives here as text). */
  thinkingSignature?: string;
  redacted?: boolean;
  providerOptions?: ProviderOptions;
}

export interface NormalToolCall {
  type: "toolCall";
  /** The id to send, unique in the request. */
  id: string;
  /** The id as stored (an OpenAI Responses call keeps its item id after the `|`). */
  sourceId: string;
  name: string;
  arguments: Record<string, unknown>;
  /** Same model only: Gemini's signature on a function call. */
  thoughtSignature?: string;
  providerOptions?: ProviderOptions;
}

export type NormalAssistantBlock = NormalText | NormalThinking | NormalToolCall;

export interface NormalUser {
  role: "user";
  /** Never empty. */
  content: Array<TextContent | ImageContent>;
}

export interface NormalAssistant {
  role: "assistant";
  /** Never empty. */
  content: NormalAssistantBlock[];
  /** Made by the target model: its signatures and reasoning may be sent back. */
  sameModel: boolean;
  source: AssistantMessage;
}

export interface NormalToolResult {
  /** The wire id of its call. */
  toolCallId: string;
  /** The call's name (a result read from an API that does not carry one may have stored ""). */
  toolName: string;
  content: Array<TextContent | ImageContent>;
  isError: boolean;
}

/** The answers to the turn before, one per call, in call order. */
export interface NormalToolResults {
  role: "toolResults";
  results: NormalToolResult[];
}

/** Instructions kept in the conversation (a Codex rollout's), for an API with a developer role. */
export interface NormalDeveloper {
  role: "developer";
  /** Never blank. */
  text: string;
}

export type NormalMessage = NormalUser | NormalAssistant | NormalToolResults | NormalDeveloper;

export interface NormalizeOptions {
  ids: ToolCallIdRule;
  /**
   * Readable thinking of another model: "text" (default) for a request, as the model cannot read
   * another's thinking blocks; "thinking" to keep it shown as thinking (a chat UI).
   */
  foreignThinking?: "text" | "thinking";
  /**
   * Whether developer messages stay in the conversation, in their place (an API with a developer
   * role); otherwise they are left out, their text going into the system prompt.
   */
  developerMessages?: boolean;
}

/** The formats whose API takes `developer` messages in the conversation (OpenAI's). */
const DEVELOPER_ROLE_FORMATS = ["openai-chat", "openai-responses"] as const;
type DeveloperRoleFormat = (typeof DEVELOPER_ROLE_FORMATS)[number];

/** The messages a format is given: developer messages only where its API has that role. */
export type NormalMessageFor<F extends ContextFormat> = F extends DeveloperRoleFormat
  ? NormalMessage
  : Exclude<NormalMessage, NormalDeveloper>;

export const NO_RESULT_TEXT = "No result provided";
/** The text of an error result that holds nothing (Anthropic refuses an empty one). */
export const EMPTY_ERROR_RESULT_TEXT = "The tool failed with no output.";
export const USER_IMAGE_NOTE = "(image omitted: model does not support images)";
export const TOOL_IMAGE_NOTE = "(tool image omitted: model does not support images)";
/** The text of a tool result that holds only images, where the API needs text. */
export const TOOL_IMAGE_PLACEHOLDER = "(see attached image)";

function isBlank(text: string): boolean {
  return text.trim().length === 0;
}

/** Text and images of user or tool-result content, cleaned; images become one note per run when unreadable. */
function cleanContent(
  content: ReadonlyArray<TextContent | ImageContent>,
  imageInput: boolean,
  note: string,
): Array<TextContent | ImageContent> {
  const out: Array<TextContent | ImageContent> = [];
  let lastWasNote = false;
  for (const part of content) {
    if (part.type === "image") {
      if (imageInput) out.push({ type: "image", data: part.data, mimeType: part.mimeType });
      else if (!lastWasNote) out.push({ type: "text", text: note });
      lastWasNote = !imageInput;
      continue;
    }
    if (part.type !== "text" || typeof part.text !== "string") continue;
    const text = stripLoneSurrogates(part.text);
    lastWasNote = false;
    if (!isBlank(text)) out.push({ type: "text", text });
  }
  return out;
}

function providerOptionsOf(block: object): ProviderOptions | undefined {
  const value = (block as { providerOptions?: unknown }).providerOptions;
  return value !== null && typeof value === "object" ? (value as ProviderOptions) : undefined;
}

/** An assistant's blocks as they are sent: blank ones left out, ids from `ids`, signatures for the same model only. */
export function assistantBlocks(
  message: AssistantMessage,
  sameModel: boolean,
  ids: ToolCallIds,
  foreignThinking: "text" | "thinking",
): NormalAssistantBlock[] {
  const blocks: NormalAssistantBlock[] = [];
  for (const block of message.content) {
    if (block.type === "text") {
      const text = stripLoneSurrogates(block.text);
      if (isBlank(text)) continue;
      const out: NormalText = { type: "text", text };
      if (sameModel) {
        if (block.textSignature) out.textSignature = block.textSignature;
        const options = providerOptionsOf(block);
        if (options) out.providerOptions = options;
      }
      blocks.push(out);
    } else if (block.type === "thinking") {
      const thinking = thinkingBlock(block, sameModel, foreignThinking);
      if (thinking) blocks.push(thinking);
    } else if (block.type === "toolCall") {
      blocks.push(toolCallBlock(block, sameModel, ids));
    }
  }
  return blocks;
}

function thinkingBlock(
  block: ThinkingContent,
  sameModel: boolean,
  foreignThinking: "text" | "thinking",
): NormalText | NormalThinking | undefined {
  const thinking = stripLoneSurrogates(block.thinking);
  const options = providerOptionsOf(block);
  if (sameModel) {
    // Opaque reasoning (redacted, or encrypted with an empty summary) is replayed as it came.
    if (block.redacted || block.thinkingSignature || options) {
      const out: NormalThinking = { type: "thinking", thinking };
      if (block.thinkingSignature) out.thinkingSignature = block.thinkingSignature;
      if (block.redacted) out.redacted = true;
      if (options) out.providerOptions = options;
      return out;
    }
    return isBlank(thinking) ? undefined : { type: "thinking", thinking };
  }
  if (block.redacted || isBlank(thinking)) return undefined;
  return foreignThinking === "text" ? { type: "text", text: thinking } : { type: "thinking", thinking };
}

function toolCallBlock(block: ToolCall, sameModel: boolean, ids: ToolCallIds): NormalToolCall {
  const args = block.arguments !== null && typeof block.arguments === "object" ? block.arguments : {};
  const out: NormalToolCall = {
    type: "toolCall",
    id: ids.allocate(block.id),
    sourceId: block.id,
    name: block.name,
    arguments: stripLoneSurrogatesDeep(args),
  };
  if (sameModel) {
    if (typeof block.thoughtSignature === "string") out.thoughtSignature = block.thoughtSignature;
    const options = providerOptionsOf(block);
    if (options) out.providerOptions = options;
  }
  return out;
}

/** The calls of the last kept assistant turn, waiting for their results. */
class PendingCalls {
  readonly results: Array<NormalToolResult | undefined>;
  /** Positions of the calls with each id, and how many of them are answered (calls are answered in order). */
  private readonly bySourceId = new Map<string, { slots: number[]; answered: number }>();
  /** The stored id of each pi-ai Responses call (`call_id|item_id`) by its `call_id`. */
  private readonly byCallId = new Map<string, string>();

  constructor(readonly calls: NormalToolCall[]) {
    this.results = new Array(calls.length);
    calls.forEach((call, index) => {
      const entry = this.bySourceId.get(call.sourceId);
      if (entry) entry.slots.push(index);
      else this.bySourceId.set(call.sourceId, { slots: [index], answered: 0 });
      const callId = callIdPart(call.sourceId);
      if (callId !== call.sourceId && !this.byCallId.has(callId)) this.byCallId.set(callId, call.sourceId);
    });
  }

  /**
   * Takes `message` as the answer to the first unanswered call with its id; false when there is
   * none. A result naming only the `call_id` of a pi-ai Responses id (`call_id|item_id`), as an
   * API's own tool output does, answers that call too.
   */
  answer(message: ToolResultMessage, imageInput: boolean): boolean {
    const sourceId = this.bySourceId.has(message.toolCallId)
      ? message.toolCallId
      : this.byCallId.get(message.toolCallId);
    const entry = sourceId === undefined ? undefined : this.bySourceId.get(sourceId);
    const index = entry?.slots[entry.answered];
    if (entry === undefined || index === undefined) return false;
    entry.answered++;
    const call = this.calls[index] as NormalToolCall;
    const isError = message.isError === true;
    const content = cleanContent(message.content, imageInput, TOOL_IMAGE_NOTE);
    if (isError && content.length === 0) content.push({ type: "text", text: EMPTY_ERROR_RESULT_TEXT });
    this.results[index] = { toolCallId: call.id, toolName: call.name, content, isError };
    return true;
  }

  /** Whether any call got its result. */
  answered(): boolean {
    return this.results.some((result) => result !== undefined);
  }

  /** Every call answered, in call order: the missing ones with an error result. */
  close(): NormalToolResults {
    return {
      role: "toolResults",
      results: this.calls.map(
        (call, index) =>
          this.results[index] ?? {
            toolCallId: call.id,
            toolName: call.name,
            content: [{ type: "text", text: NO_RESULT_TEXT }],
            isError: true,
          },
      ),
    };
  }
}

export function normalizeMessages(
  messages: readonly AgentMessage[],
  target: TargetModel,
  options: NormalizeOptions,
): NormalMessage[] {
  const imageInput = target.imageInput !== false;
  const foreignThinking = options.foreignThinking ?? "text";
  const ids = new ToolCallIds(options.ids);
  const out: NormalMessage[] = [];
  let pending: PendingCalls | undefined;

  const closeTurn = () => {
    if (pending) out.push(pending.close());
    pending = undefined;
  };

  for (const original of messages) {
    if (isDeveloperMessage(original)) {
      const text = stripLoneSurrogates(developerMessageText(original));
      if (!options.developerMessages || isBlank(text)) continue;
      // Instructions open a turn as a user message does: the turn before is answered first.
      closeTurn();
      out.push({ role: "developer", text });
      continue;
    }
    const message = toModelMessage(original);
    if (!message) continue;
    if (message.role === "toolResult") {
      // A result with no waiting call (its turn failed, or it came after the next message) is dropped.
      pending?.answer(message as ToolResultMessage, imageInput);
      continue;
    }
    if (message.role === "user") {
      closeTurn();
      const raw = (message as { content: unknown }).content;
      const parts =
        typeof raw === "string" ? [{ type: "text" as const, text: raw }] : Array.isArray(raw) ? raw : [];
      const content = cleanContent(parts, imageInput, USER_IMAGE_NOTE);
      if (content.length > 0) out.push({ role: "user", content });
      continue;
    }
    const assistant = message as AssistantMessage;
    // An incomplete turn is not replayed: the model retries from the last complete state.
    const incomplete = assistant.stopReason === "error" || assistant.stopReason === "aborted";
    const sameModel = isSameModel(assistant, target);
    const content = incomplete ? [] : assistantBlocks(assistant, sameModel, ids, foreignThinking);
    if (content.length === 0) {
      closeTurn();
      continue;
    }
    const calls = content.filter((block): block is NormalToolCall => block.type === "toolCall");
    const previous = out.at(-1);
    if (previous?.role === "assistant" && previous.sameModel === sameModel && !pending?.answered()) {
      // One turn stored as several messages (a framework that wrote each output item apart, one
      // parallel call at a time): the calls of all of them are answered after the last.
      previous.content.push(...content);
      const waiting = [...(pending?.calls ?? []), ...calls];
      if (waiting.length > 0) pending = new PendingCalls(waiting);
      continue;
    }
    closeTurn();
    out.push({ role: "assistant", content, sameModel, source: assistant });
    if (calls.length > 0) pending = new PendingCalls(calls);
  }
  closeTurn();
  return out;
}

/**
 * A context's system prompt and its messages normalized for `format`, sent to `model`. Developer
 * messages stay in place for an API with that role, and go into the system prompt for the others.
 */
export function normalizeContext<F extends ContextFormat>(
  context: SessionContext,
  format: F,
  model: TargetModel,
  options: NormalizeOptions,
): { system: string; messages: Array<NormalMessageFor<F>> } {
  const developerMessages = (DEVELOPER_ROLE_FORMATS as readonly ContextFormat[]).includes(format);
  const messages = normalizeMessages(context.messages, targetForFormat(format, model), {
    ...options,
    developerMessages,
  });
  return {
    system: stripLoneSurrogates(contextSystemPrompt(context, { developerMessages: !developerMessages })),
    // Without the developer role none is kept (`developerMessages` is false).
    messages: messages as Array<NormalMessageFor<F>>,
  };
}

/** Tool-result content as its text parts joined by newlines, and its images. */
export function resultParts(content: ReadonlyArray<TextContent | ImageContent>): {
  text: string;
  images: ImageContent[];
} {
  return {
    text: content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n"),
    images: content.filter((part): part is ImageContent => part.type === "image"),
  };
}
