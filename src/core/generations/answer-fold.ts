import * as z from "zod";
import { SessionError } from "../errors";
import type {
  AgentMessage,
  AssistantMessage,
  TextContent,
  ThinkingContent,
  ToolCall,
  ToolResultMessage,
  Usage,
} from "../messages";
import {
  AssistantMessage as AssistantMessageSchema,
  NO_USAGE,
  TextContent as TextContentSchema,
  ThinkingContent as ThinkingContentSchema,
  ToolCall as ToolCallSchema,
  Usage as UsageSchema,
} from "../messages";
import { AISDKProviderOptionsInput, aiSdkAssistantContent, aiSdkStopReason } from "../providers/from-ai-sdk";
import { deniedText, isProviderRun } from "../providers/from-ai-sdk-ui";
import { assistantMessage, hasToolCall, isRecord, toolResultMessage } from "../providers/incoming";
import { MAX_CONTENT_BLOCKS } from "./chunks";
import type { GenerationFormat } from "./generation-schemas";

/*
 * A generation's chunks folded into the answer they make, read once in order: plain text; pi-ai's
 * assistant-message events (their deltas, by content index; a `done` or `error` event carries the
 * whole message); the AI SDK's UI message stream parts (text and reasoning by part id, tool calls
 * and their final results, one assistant message per step, each part's provider metadata kept on its
 * block as the AI SDK's messages keep it; tools the provider ran left out with their outputs, and a
 * denied call's result in the AI SDK's words, as the reader of UI messages reads the same answer
 * from its UIMessage). A stopped generation keeps what came,
 * with `stopReason: "aborted"`; a tool call whose input never arrived whole is left out. Chunks are
 * checked when appended (chunks.ts); here, whatever a stream holds makes an answer: an event the
 * answer cannot be made of is passed over.
 */

/** Who answered, recorded on the assembled message. */
export type AnswerSource = Pick<AssistantMessage, "provider" | "model" | "api">;

export interface AnswerFold {
  /** The next chunk: a piece of text (text), or one event (pi-ai, ai-sdk-ui). */
  add(chunk: unknown): void;
  /** The answer so far as messages (at least one assistant message), stopped or not. */
  finish(options: { stopped: boolean; timestamp: number }): AgentMessage[];
}

type Block = TextContent | ThinkingContent | ToolCall;

function record(value: unknown): Record<string, unknown> | undefined {
  return isRecord(value) ? value : undefined;
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function assistant(
  source: AnswerSource,
  content: Block[],
  stopReason: string,
  timestamp: number,
  usage: Usage = NO_USAGE,
): AssistantMessage {
  return assistantMessage({ ...source, content, usage, stopReason, timestamp });
}

/** A message given whole (a `done` event's, or a complete request's): it must be an assistant's. */
export function checkedAssistant(value: unknown, where: string): AssistantMessage {
  const parsed = AssistantMessageSchema.safeParse(value);
  if (!parsed.success) {
    throw new SessionError("invalid_request", `${where} is not a pi-ai assistant message`, {
      issues: parsed.error.issues.map((issue) => ({ path: issue.path.map(String), message: issue.message })),
    });
  }
  return value as AssistantMessage;
}

class TextFold implements AnswerFold {
  readonly #source: AnswerSource;
  #pieces: string[] = [];

  constructor(source: AnswerSource) {
    this.#source = source;
  }

  add(chunk: unknown): void {
    this.#pieces.push(text(chunk));
  }

  finish({ stopped, timestamp }: { stopped: boolean; timestamp: number }): AgentMessage[] {
    const all = this.#pieces.join("");
    const content: Block[] = all === "" ? [] : [{ type: "text", text: all }];
    return [assistant(this.#source, content, stopped ? "aborted" : "stop", timestamp)];
  }
}

/** A tool call's input as it arrives: its JSON text, parsed once it is whole. */
interface PendingCall {
  id: string;
  name: string;
  json: string;
  /** What the provider said of the call as it started (an AI SDK stream's `providerMetadata`). */
  metadata?: ProviderMetadata;
}

type ProviderMetadata = z.output<typeof AISDKProviderOptionsInput>;

/** The provider metadata an AI SDK stream part carries, when it is what the AI SDK keeps. */
function providerMetadata(part: Record<string, unknown>): ProviderMetadata | undefined {
  const parsed = AISDKProviderOptionsInput.safeParse(part.providerMetadata);
  return parsed.success ? parsed.data : undefined;
}

/** What a partial message's block at a content index must be, by its type, to be taken whole. */
const PARTIAL_BLOCKS = { text: TextContentSchema, thinking: ThinkingContentSchema, toolCall: ToolCallSchema };

/** A content index an event names, when it is one (0 to MAX_CONTENT_BLOCKS - 1). */
function contentIndex(value: unknown): number | undefined {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) < MAX_CONTENT_BLOCKS
    ? (value as number)
    : undefined;
}

class PiAiFold implements AnswerFold {
  readonly #source: AnswerSource;
  #base: Record<string, unknown> | undefined;
  /** The blocks by content index: as many as were named, never a sparse array of the highest. */
  readonly #blocks = new Map<number, Block | PendingCall>();
  #final: AssistantMessage | undefined;

  constructor(source: AnswerSource) {
    this.#source = source;
  }

  /** The block a partial message holds at `index`, when it is a valid one of `type`. */
  #partialBlock(event: Record<string, unknown>, index: number, type: keyof typeof PARTIAL_BLOCKS) {
    const content = record(event.partial)?.content;
    const block = Array.isArray(content) ? content[index] : undefined;
    return PARTIAL_BLOCKS[type].safeParse(block).success ? (structuredClone(block) as Block) : undefined;
  }

  /** The message a `done` or `error` event carries, when it is an assistant's. */
  #whole(message: unknown): void {
    if (AssistantMessageSchema.safeParse(message).success) this.#final = message as AssistantMessage;
  }

  add(chunk: unknown): void {
    const event = record(chunk);
    if (!event) return;
    if (event.type === "start") this.#base = record(event.partial);
    else if (event.type === "done") this.#whole(event.message);
    else if (event.type === "error") this.#whole(event.error);
    else {
      const index = contentIndex(event.contentIndex);
      if (index !== undefined) this.#addToBlock(event, index);
    }
  }

  #addToBlock(event: Record<string, unknown>, index: number): void {
    const blocks = this.#blocks;
    const at = blocks.get(index);
    switch (event.type) {
      case "text_start":
        blocks.set(index, { type: "text", text: "" });
        return;
      case "text_delta":
        if (at && "type" in at && at.type === "text") at.text += text(event.delta);
        else blocks.set(index, { type: "text", text: text(event.delta) });
        return;
      case "text_end":
        blocks.set(
          index,
          this.#partialBlock(event, index, "text") ?? { type: "text", text: text(event.content) },
        );
        return;
      case "thinking_start":
        blocks.set(index, { type: "thinking", thinking: "" });
        return;
      case "thinking_delta":
        if (at && "type" in at && at.type === "thinking") at.thinking += text(event.delta);
        else blocks.set(index, { type: "thinking", thinking: text(event.delta) });
        return;
      case "thinking_end":
        blocks.set(
          index,
          this.#partialBlock(event, index, "thinking") ?? { type: "thinking", thinking: text(event.content) },
        );
        return;
      case "toolcall_start": {
        const started = this.#partialBlock(event, index, "toolCall") as ToolCall | undefined;
        blocks.set(index, { id: started?.id ?? "", name: started?.name ?? "", json: "" });
        return;
      }
      case "toolcall_delta":
        if (at && "json" in at) at.json += text(event.delta);
        return;
      case "toolcall_end":
        if (ToolCallSchema.safeParse(event.toolCall).success) blocks.set(index, event.toolCall as ToolCall);
        return;
    }
  }

  finish({ stopped, timestamp }: { stopped: boolean; timestamp: number }): AgentMessage[] {
    if (this.#final) return [stopped ? { ...this.#final, stopReason: "aborted" } : this.#final];
    const content = [...this.#blocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, block]) => block)
      .filter((block): block is Block => "type" in block);
    const base = this.#base;
    const source: AnswerSource = {
      provider: typeof base?.provider === "string" ? base.provider : this.#source.provider,
      model: typeof base?.model === "string" ? base.model : this.#source.model,
      api: typeof base?.api === "string" ? base.api : this.#source.api,
    };
    const calls = hasToolCall(content);
    const stopReason = stopped ? "aborted" : calls ? "toolUse" : "stop";
    const usage = UsageSchema.safeParse(base?.usage).success ? (base?.usage as Usage) : NO_USAGE;
    return [assistant(source, content, stopReason, timestamp, usage)];
  }
}

/** A tool's output as the text of its result. */
export function outputText(output: unknown): string {
  return typeof output === "string" ? output : JSON.stringify(output ?? null);
}

class UiMessageFold implements AnswerFold {
  readonly #source: AnswerSource;
  readonly #done: AgentMessage[] = [];
  #content: Block[] = [];
  #results: ToolResultMessage[] = [];
  readonly #parts = new Map<string, TextContent | ThinkingContent>();
  /** The provider metadata of the step's blocks: the last a chunk of each carried, as the AI SDK keeps it. */
  readonly #metadata = new Map<Block, ProviderMetadata>();
  readonly #calls = new Map<string, PendingCall>();
  /** Calls of tools the provider ran: left out with their outputs, as a UIMessage reads. */
  readonly #providerRun = new Set<string>();
  #finishReason: unknown;
  #errorText: string | undefined;
  #aborted = false;
  #timestamp = 0;

  constructor(source: AnswerSource) {
    this.#source = source;
  }

  /**
   * A step ends: its assistant message, then the results of the tools it ran. Its blocks are read
   * as the AI SDK's parts they stand for, so that each keeps its provider metadata and the
   * signatures in it, as the same answer read from its UIMessage does. Results without blocks
   * answer the calls of the message the answer goes on with (a tool run once the UI approved it):
   * they follow that message as they are.
   */
  #endStep(): void {
    if (this.#content.length > 0) {
      const content = aiSdkAssistantContent(this.#content.map((block) => this.#aiSdkPart(block)));
      const stopReason = hasToolCall(content) ? "toolUse" : "stop";
      this.#done.push(assistant(this.#source, content, stopReason, this.#timestamp));
    }
    this.#done.push(...this.#results);
    this.#content = [];
    this.#results = [];
    this.#parts.clear();
    this.#metadata.clear();
  }

  /** A block as the AI SDK model message part it stands for, with its provider metadata. */
  #aiSdkPart(block: Block) {
    const providerOptions = this.#metadata.get(block);
    const part =
      block.type === "text"
        ? { type: "text" as const, text: block.text }
        : block.type === "thinking"
          ? { type: "reasoning" as const, text: block.thinking }
          : {
              type: "tool-call" as const,
              toolCallId: block.id,
              toolName: block.name,
              input: block.arguments,
            };
    return providerOptions ? { ...part, providerOptions } : part;
  }

  /** Keeps the provider metadata a chunk of `block`'s part carries, when it carries some. */
  #keepMetadata(block: Block | undefined, part: Record<string, unknown>): void {
    const metadata = providerMetadata(part);
    if (block && metadata) this.#metadata.set(block, metadata);
  }

  /** The block of part `id` when it is one of `type`. */
  #known(id: string, type: "text" | "thinking"): Block | undefined {
    const known = this.#parts.get(id);
    return known?.type === type ? known : undefined;
  }

  #part(id: string, type: "text" | "thinking"): TextContent | ThinkingContent {
    const known = this.#parts.get(id);
    if (known && known.type === type) return known;
    const part: TextContent | ThinkingContent =
      type === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "" };
    this.#parts.set(id, part);
    this.#content.push(part);
    return part;
  }

  #result(toolCallId: string, output: string, isError: boolean): void {
    const toolName = this.#calls.get(toolCallId)?.name ?? "";
    const content: TextContent[] = [{ type: "text", text: output }];
    this.#results.push(toolResultMessage(toolCallId, toolName, content, isError, this.#timestamp));
  }

  add(chunk: unknown): void {
    const part = record(chunk);
    if (!part) return;
    const id = text(part.id);
    const toolCallId = text(part.toolCallId);
    if (typeof part.type === "string" && part.type.startsWith("tool-")) {
      if (isProviderRun(part)) this.#providerRun.add(toolCallId);
      if (this.#providerRun.has(toolCallId)) return;
    }
    switch (part.type) {
      case "start-step":
      case "finish-step":
        this.#endStep();
        return;
      case "text-start":
        this.#keepMetadata(this.#part(id, "text"), part);
        return;
      case "text-delta": {
        const block = this.#part(id, "text") as TextContent;
        block.text += text(part.delta);
        this.#keepMetadata(block, part);
        return;
      }
      case "text-end":
        this.#keepMetadata(this.#known(id, "text"), part);
        return;
      case "reasoning-start":
        this.#keepMetadata(this.#part(id, "thinking"), part);
        return;
      case "reasoning-delta": {
        const block = this.#part(id, "thinking") as ThinkingContent;
        block.thinking += text(part.delta);
        this.#keepMetadata(block, part);
        return;
      }
      case "reasoning-end":
        this.#keepMetadata(this.#known(id, "thinking"), part);
        return;
      case "tool-input-start": {
        const metadata = providerMetadata(part);
        const call: PendingCall = { id: toolCallId, name: text(part.toolName), json: "" };
        this.#calls.set(toolCallId, metadata ? { ...call, metadata } : call);
        return;
      }
      case "tool-input-delta": {
        const call = this.#calls.get(toolCallId);
        if (call) call.json += text(part.inputTextDelta);
        return;
      }
      case "tool-input-available":
      case "tool-input-error": {
        const started = this.#calls.get(toolCallId);
        const name = text(part.toolName) || (started?.name ?? "");
        this.#calls.set(toolCallId, { id: toolCallId, name, json: "" });
        const input = record(part.input) ?? {};
        const call: ToolCall = { type: "toolCall", id: toolCallId, name, arguments: input };
        this.#content.push(call);
        // An input error's metadata is its result's, as the AI SDK keeps it: the call keeps its start's.
        const metadata =
          (part.type === "tool-input-available" ? providerMetadata(part) : undefined) ?? started?.metadata;
        if (metadata) this.#metadata.set(call, metadata);
        if (part.type === "tool-input-error") this.#result(toolCallId, text(part.errorText), true);
        return;
      }
      case "tool-output-available":
        // A preliminary output (a tool's yield) is replaced by the next one: the final one is its result.
        if (part.preliminary !== true) this.#result(toolCallId, outputText(part.output), false);
        return;
      case "tool-output-error":
        this.#result(toolCallId, text(part.errorText), true);
        return;
      case "tool-output-denied":
        // The AI SDK's stream does not say why; a UIMessage given whole does.
        this.#result(toolCallId, deniedText(part.reason), true);
        return;
      case "finish":
        this.#finishReason = part.finishReason;
        return;
      case "error":
        this.#errorText = text(part.errorText);
        return;
      case "abort":
        this.#aborted = true;
        return;
    }
  }

  finish({ stopped, timestamp }: { stopped: boolean; timestamp: number }): AgentMessage[] {
    this.#timestamp = timestamp;
    for (const message of this.#done) message.timestamp = timestamp;
    for (const result of this.#results) result.timestamp = timestamp;
    this.#endStep();
    const messages = [...this.#done];
    let last = messages.findLast((message): message is AssistantMessage => message.role === "assistant");
    // A step that ended in tool results, or nothing at all: the answer still ends in an assistant message.
    if (!last || messages.at(-1) !== last) {
      last = assistant(this.#source, [], "stop", timestamp);
      messages.push(last);
    }
    if (stopped || this.#aborted) last.stopReason = "aborted";
    else if (this.#errorText !== undefined) {
      last.stopReason = "error";
      last.errorMessage = this.#errorText;
    } else last.stopReason = aiSdkStopReason(this.#finishReason, hasToolCall(last.content)).stopReason;
    return messages;
  }
}

export function answerFold(format: GenerationFormat, source: AnswerSource): AnswerFold {
  switch (format) {
    case "text":
      return new TextFold(source);
    case "pi-ai":
      return new PiAiFold(source);
    case "ai-sdk-ui":
      return new UiMessageFold(source);
  }
}

/** An AI SDK UI message (what `useChat` holds, what `toUIMessageStream`'s `onFinish` gives). */
const UIAssistantMessage = z.looseObject({
  role: z.literal("assistant"),
  parts: z.array(z.looseObject({ type: z.string() })),
});

/**
 * A UIMessage's parts as the stream parts that would have made it, read as the UIMessage reader
 * reads them: a call still streaming its input is left out, a denial's result is the reason the
 * UI gave, and a tool the provider ran says so.
 */
function* uiMessageChunks(parts: ReadonlyArray<Record<string, unknown>>): Generator<Record<string, unknown>> {
  let n = 0;
  for (const part of parts) {
    const id = `p${n++}`;
    const type = String(part.type);
    if (type === "step-start") yield { type: "start-step" };
    else if (type === "text")
      yield { type: "text-delta", id, delta: text(part.text), providerMetadata: part.providerMetadata };
    else if (type === "reasoning")
      yield { type: "reasoning-delta", id, delta: text(part.text), providerMetadata: part.providerMetadata };
    else if ((type === "dynamic-tool" || type.startsWith("tool-")) && part.state !== "input-streaming") {
      const toolName = type === "dynamic-tool" ? text(part.toolName) : type.slice("tool-".length);
      const toolCallId = text(part.toolCallId);
      const providerMetadata = part.callProviderMetadata;
      const providerExecuted = part.providerExecuted;
      yield {
        type: "tool-input-available",
        toolCallId,
        toolName,
        input: part.input,
        providerMetadata,
        providerExecuted,
      };
      if (part.state === "output-available")
        yield { type: "tool-output-available", toolCallId, output: part.output, providerExecuted };
      if (part.state === "output-error")
        yield { type: "tool-output-error", toolCallId, errorText: part.errorText, providerExecuted };
      if (part.state === "output-denied") {
        const approval = record(part.approval);
        yield { type: "tool-output-denied", toolCallId, reason: approval?.reason, providerExecuted };
      }
    }
  }
}

/**
 * The answer a complete request gives whole: a pi-ai assistant message (text, pi-ai), or the
 * UIMessage the AI SDK built (ai-sdk-ui).
 */
export function givenAnswer(
  format: GenerationFormat,
  message: unknown,
  source: AnswerSource,
  timestamp: number,
): AgentMessage[] {
  if (format !== "ai-sdk-ui") return [checkedAssistant(message, "message")];
  const parsed = UIAssistantMessage.safeParse(message);
  if (!parsed.success) {
    throw new SessionError("invalid_request", "message is not an AI SDK assistant UIMessage (role, parts)", {
      issues: parsed.error.issues.map((issue) => ({ path: issue.path.map(String), message: issue.message })),
    });
  }
  const fold = answerFold(format, source);
  for (const chunk of uiMessageChunks(parsed.data.parts)) fold.add(chunk);
  return fold.finish({ stopped: false, timestamp });
}
