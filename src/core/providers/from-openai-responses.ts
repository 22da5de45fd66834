import * as z from "zod";
import type { AgentMessage, AssistantMessage, ImageContent, TextContent } from "../messages";
import { UnixSeconds, usage } from "../messages";
import type { ReadOptions, StopReason } from "./incoming";
import {
  assistantMessage,
  byKind,
  dataUrlImage,
  hasToolCall,
  objectOf,
  parseArguments,
  readWith,
  replySource,
  WaitingCalls,
} from "./incoming";
import { messageSignature } from "./responses-signatures";
import { FORMAT_API } from "./target";

/*
 * OpenAI Responses in: a `response` object (its output items), or an input item a caller made: a
 * `function_call_output` holding a result, or a user message. Reasoning items are kept whole as
 * the thinking signature (encrypted content included), message items keep their id and phase as
 * the text signature, function calls keep `call_id|item_id` as their id: pi-ai's conventions, so
 * the same model gets every item back as it sent it.
 */

const ReasoningItem = z.looseObject({
  type: z.literal("reasoning"),
  id: z.string(),
  summary: z.array(z.looseObject({ text: z.string() })),
  content: z.array(z.looseObject({ text: z.string() })).nullish(),
  encrypted_content: z.string().nullish(),
});

const MessageItem = z.looseObject({
  type: z.literal("message"),
  id: z.string(),
  role: z.literal("assistant"),
  content: z.array(
    byKind(z.looseObject({ type: z.string() }), "type", {
      output_text: z.looseObject({ type: z.literal("output_text"), text: z.string() }),
      refusal: z.looseObject({ type: z.literal("refusal"), refusal: z.string() }),
    }),
  ),
  phase: z.string().nullish(),
});

const FunctionCallItem = z.looseObject({
  type: z.literal("function_call"),
  id: z.string().nullish(),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
});

const OutputItem = byKind(z.looseObject({ type: z.string() }), "type", {
  reasoning: ReasoningItem,
  message: MessageItem,
  function_call: FunctionCallItem,
});

export const OpenAIResponseInput = z.looseObject({
  object: z.literal("response"),
  id: z.string(),
  created_at: UnixSeconds,
  model: z.string(),
  status: z.string().nullish(),
  output: z.array(OutputItem),
  usage: z
    .looseObject({
      input_tokens: z.number(),
      output_tokens: z.number(),
      total_tokens: z.number().optional(),
      input_tokens_details: z.looseObject({ cached_tokens: z.number().nullish() }).nullish(),
    })
    .nullish(),
  error: z.looseObject({ code: z.string().nullish(), message: z.string().nullish() }).nullish(),
  incomplete_details: z.looseObject({ reason: z.string().nullish() }).nullish(),
});

const InputText = z.looseObject({ type: z.literal("input_text"), text: z.string() });
const InputImage = z.looseObject({ type: z.literal("input_image"), image_url: z.string() });
const InputContent = z.array(z.discriminatedUnion("type", [InputText, InputImage]));

export const OpenAIResponsesFunctionOutputInput = z.looseObject({
  type: z.literal("function_call_output"),
  call_id: z.string(),
  output: z.union([z.string(), InputContent]),
});

export const OpenAIResponsesUserInput = z.looseObject({
  type: z.literal("message").optional(),
  role: z.literal("user"),
  content: z.union([z.string(), InputContent]),
});

type Response = z.output<typeof OpenAIResponseInput>;

function stopReason(response: Response, hasCalls: boolean): StopReason {
  const { status, error } = response;
  if (status === "incomplete") {
    return response.incomplete_details?.reason === "content_filter"
      ? { stopReason: "error", errorMessage: "incomplete: content_filter" }
      : { stopReason: "length" };
  }
  if (status !== "failed" && status !== "cancelled") return { stopReason: hasCalls ? "toolUse" : "stop" };
  return {
    stopReason: "error",
    errorMessage: error ? `${error.code ?? "error"}: ${error.message ?? ""}` : status,
  };
}

/** The blocks of a response's output; `original` is the output as sent, kept whole for reasoning items. */
function outputContent(response: Response, original: readonly unknown[]): AssistantMessage["content"] {
  const content: AssistantMessage["content"] = [];
  response.output.forEach((raw, index) => {
    if (raw.type === "reasoning") {
      const item = raw as z.output<typeof ReasoningItem>;
      const summary = item.summary.map((part) => part.text).join("\n\n");
      const text = summary || (item.content ?? []).map((part) => part.text).join("\n\n");
      content.push({ type: "thinking", thinking: text, thinkingSignature: JSON.stringify(original[index]) });
    } else if (raw.type === "message") {
      const item = raw as z.output<typeof MessageItem>;
      const text = item.content
        .map((part) =>
          part.type === "output_text" ? part.text : part.type === "refusal" ? part.refusal : "",
        )
        .join("");
      const textSignature = messageSignature(item.id, item.phase || undefined);
      content.push({ type: "text", text: String(text), textSignature });
    } else if (raw.type === "function_call") {
      const item = raw as z.output<typeof FunctionCallItem>;
      content.push({
        type: "toolCall",
        id: item.id ? `${item.call_id}|${item.id}` : item.call_id,
        name: item.name,
        arguments: parseArguments(item.arguments),
      });
    }
  });
  return content;
}

function inputContent(
  content: string | z.output<typeof InputContent>,
  path: ReadonlyArray<string | number>,
): Array<TextContent | ImageContent> {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return content.map((part, index): TextContent | ImageContent =>
    part.type === "input_text"
      ? { type: "text", text: part.text }
      : dataUrlImage("openai-responses", part.image_url, [...path, index, "image_url"]),
  );
}

/** The messages a Responses response or input item stands for. */
export function fromOpenAIResponses(input: unknown, options: ReadOptions = {}): AgentMessage[] {
  const raw = objectOf("openai-responses", input);
  // Input items carry a `type` or a `role`; a response carries neither.
  if (raw.object === "response" || (raw.type === undefined && raw.role === undefined)) {
    const response = readWith("openai-responses", OpenAIResponseInput, input);
    const content = outputContent(response, raw.output as unknown[]);
    const u = response.usage;
    const cached = u?.input_tokens_details?.cached_tokens ?? 0;
    return [
      assistantMessage({
        content,
        ...replySource(options, FORMAT_API["openai-responses"], "openai", response.model),
        usage: u
          ? usage(u.input_tokens - cached, u.output_tokens, cached, 0, u.total_tokens)
          : usage(0, 0, 0, 0),
        ...stopReason(response, hasToolCall(content)),
        timestamp: options.timestamp ?? response.created_at * 1000,
        responseId: response.id,
      }),
    ];
  }
  const timestamp = options.timestamp ?? Date.now();
  if (raw.type === "function_call_output") {
    const item = readWith("openai-responses", OpenAIResponsesFunctionOutputInput, input);
    const content = inputContent(item.output, ["output"]);
    return [new WaitingCalls(options.history).result(item.call_id, content, false, timestamp)];
  }
  const message = readWith("openai-responses", OpenAIResponsesUserInput, input);
  return [{ role: "user", content: inputContent(message.content, ["content"]), timestamp }];
}
