import * as z from "zod";
import type { AgentMessage, AssistantMessage, ImageContent, TextContent } from "../messages";
import { isAssistantMessage, NO_USAGE, usage } from "../messages";
import type { ReadOptions, StopReason } from "./incoming";
import {
  assistantMessage,
  hasToolCall,
  historyReply,
  objectOf,
  readWith,
  replySource,
  stableHash,
  toolResultMessage,
  WaitingCalls,
} from "./incoming";
import { FORMAT_API } from "./target";

/*
 * Gemini in: a `generateContent` response (its first candidate), or a content as a caller sends
 * it (a user content of function responses, text and images, or a model content). Each part
 * stays its own block with its thought signature, as Google asks (a signature is never moved or
 * merged). A function call without an id gets one made from the response and its position, so
 * reading the same response twice gives the same ids.
 */

const Blob = z.looseObject({ mimeType: z.string(), data: z.string() });

const Part = z.looseObject({
  text: z.string().optional(),
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
  inlineData: Blob.optional(),
  functionCall: z
    .looseObject({
      name: z.string(),
      args: z.record(z.string(), z.unknown()).optional(),
      id: z.string().optional(),
    })
    .optional(),
  functionResponse: z
    .looseObject({
      name: z.string(),
      response: z.record(z.string(), z.unknown()).optional(),
      id: z.string().optional(),
      parts: z.array(z.looseObject({ inlineData: Blob.optional() })).optional(),
    })
    .optional(),
});

export const GeminiContentInput = z.looseObject({ role: z.enum(["user", "model"]), parts: z.array(Part) });

export const GeminiResponseInput = z.looseObject({
  candidates: z
    .array(
      z.looseObject({
        content: z.looseObject({ role: z.string().optional(), parts: z.array(Part).optional() }).optional(),
        finishReason: z.string().optional(),
        finishMessage: z.string().optional(),
      }),
    )
    .optional(),
  promptFeedback: z.looseObject({ blockReason: z.string().optional() }).optional(),
  usageMetadata: z
    .looseObject({
      promptTokenCount: z.number().optional(),
      candidatesTokenCount: z.number().optional(),
      thoughtsTokenCount: z.number().optional(),
      cachedContentTokenCount: z.number().optional(),
      totalTokenCount: z.number().optional(),
    })
    .optional(),
  modelVersion: z.string().optional(),
  responseId: z.string().optional(),
  createTime: z.string().optional(),
});

type GeminiPart = z.output<typeof Part>;

function stopReason(finish: string | undefined, hasCalls: boolean): StopReason {
  if (finish === undefined || finish === "STOP") return { stopReason: hasCalls ? "toolUse" : "stop" };
  if (finish === "MAX_TOKENS") return { stopReason: "length" };
  return { stopReason: "error", errorMessage: `finishReason: ${finish}` };
}

/**
 * The blocks of a model content. A call that came without an id gets one made from `seed` and the
 * part that no call before it in the content or in the conversation (`history`) has: the same
 * call read again on the same conversation gets the same id, and the model is never sent two
 * calls of one id.
 */
function modelContent(
  parts: readonly GeminiPart[],
  seed: string,
  history: readonly AgentMessage[] = [],
): AssistantMessage["content"] {
  const content: AssistantMessage["content"] = [];
  const ids = new Set<string>();
  /** The conversation's call ids, read only when a call came without one. */
  let taken: Set<string> | undefined;
  const made = (index: number) => {
    taken ??= new Set(
      history.flatMap((message) =>
        isAssistantMessage(message)
          ? message.content.flatMap((b) => (b.type === "toolCall" ? [b.id] : []))
          : [],
      ),
    );
    let id = "";
    for (let n = 0; id === "" || ids.has(id) || taken.has(id); n++)
      id = `call_${stableHash(n === 0 ? `${seed}:${index}` : `${seed}:${index}:${n}`)}_${index}`;
    return id;
  };
  parts.forEach((part, index) => {
    const signature = part.thoughtSignature;
    if (part.functionCall) {
      const { name, args = {}, id: given } = part.functionCall;
      const id = given && !ids.has(given) ? given : made(index);
      ids.add(id);
      content.push({
        type: "toolCall",
        id,
        name,
        arguments: args,
        ...(signature ? { thoughtSignature: signature } : {}),
      });
    } else if (typeof part.text === "string" && part.thought) {
      content.push({
        type: "thinking",
        thinking: part.text,
        ...(signature ? { thinkingSignature: signature } : {}),
      });
    } else if (typeof part.text === "string") {
      content.push({ type: "text", text: part.text, ...(signature ? { textSignature: signature } : {}) });
    }
  });
  return content;
}

function images(parts: ReadonlyArray<Pick<GeminiPart, "inlineData">>): ImageContent[] {
  return parts.flatMap(({ inlineData }): ImageContent[] =>
    inlineData ? [{ type: "image", data: inlineData.data, mimeType: inlineData.mimeType }] : [],
  );
}

function resultContent(response: Record<string, unknown> | undefined): { text: string; isError: boolean } {
  if (response && "error" in response) {
    const error = response.error;
    return { text: typeof error === "string" ? error : JSON.stringify(error), isError: true };
  }
  if (response && "output" in response && typeof response.output === "string") {
    return { text: response.output, isError: false };
  }
  return { text: response === undefined ? "" : JSON.stringify(response), isError: false };
}

/** The messages a Gemini response or content stands for. */
export function fromGemini(input: unknown, options: ReadOptions = {}): AgentMessage[] {
  const raw = objectOf("gemini", input);
  if (raw.role === undefined) {
    const response = readWith("gemini", GeminiResponseInput, input);
    const candidate = response.candidates?.[0];
    const parts = candidate?.content?.parts ?? [];
    const content = modelContent(parts, response.responseId ?? JSON.stringify(parts), options.history);
    const u = response.usageMetadata;
    const cached = u?.cachedContentTokenCount ?? 0;
    const blocked = candidate ? undefined : response.promptFeedback?.blockReason;
    const created = response.createTime ? Date.parse(response.createTime) : Number.NaN;
    return [
      assistantMessage({
        content,
        ...replySource(options, FORMAT_API.gemini, "google", response.modelVersion),
        usage: u
          ? usage(
              (u.promptTokenCount ?? 0) - cached,
              (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0),
              cached,
              0,
              u.totalTokenCount,
            )
          : NO_USAGE,
        ...(blocked !== undefined || !candidate
          ? { stopReason: "error", errorMessage: `prompt blocked: ${blocked ?? "no candidate"}` }
          : stopReason(candidate.finishReason, hasToolCall(content))),
        timestamp: options.timestamp ?? (Number.isFinite(created) ? created : Date.now()),
        responseId: response.responseId,
      }),
    ];
  }
  const message = readWith("gemini", GeminiContentInput, input);
  const timestamp = options.timestamp ?? Date.now();
  if (message.role === "model") {
    const content = modelContent(message.parts, JSON.stringify(message.parts), options.history);
    return [historyReply(content, FORMAT_API.gemini, "google", options, timestamp)];
  }
  const waiting = new WaitingCalls(options.history);
  const out: AgentMessage[] = [];
  const rest: Array<TextContent | ImageContent> = [];
  for (const part of message.parts) {
    if (part.functionResponse) {
      const { name, id, response } = part.functionResponse;
      const call = id === undefined ? undefined : waiting.answer(id);
      const callId = call?.id ?? id ?? waiting.answerByName(name) ?? name;
      const { text, isError } = resultContent(response);
      const content: Array<TextContent | ImageContent> = text ? [{ type: "text", text }] : [];
      content.push(...images(part.functionResponse.parts ?? []));
      out.push(toolResultMessage(callId, name, content, isError, timestamp));
    } else if (typeof part.text === "string") rest.push({ type: "text", text: part.text });
    else rest.push(...images([part]));
  }
  if (rest.length > 0) out.push({ role: "user", content: rest, timestamp });
  return out;
}
